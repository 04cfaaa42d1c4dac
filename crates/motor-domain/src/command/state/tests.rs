use super::*;
use crate::command::CommandEvent as E;

/// Every (status, transition) pair and what it must give: the next status
/// and its event, or `None` when the pair is refused.
fn expected(from: CommandStatus, t: Transition) -> Option<(CommandStatus, Option<E>)> {
    use CommandStatus::*;
    use Outcome as O;
    match (from, t) {
        (Accepted | Queued, Transition::Cancel) => Some((Cancelled, Some(E::Cancelled))),
        (Accepted | Queued, Transition::Claim) => Some((Executing, None)),
        (Accepted | Queued, Transition::Expired) => Some((Failed, Some(E::Failed))),
        (Executing, Transition::Report(O::Sent)) => Some((Sent, Some(E::MessageSent))),
        (Executing, Transition::Report(O::Completed)) => Some((Completed, None)),
        (Executing, Transition::Report(O::Failed)) => Some((Failed, Some(E::Failed))),
        (Executing, Transition::Report(O::Ambiguous)) => Some((Ambiguous, Some(E::Ambiguous))),
        (Executing, Transition::Report(O::Deferred)) => Some((Queued, None)),
        (Executing, Transition::LeaseExpired) => Some((Ambiguous, Some(E::Ambiguous))),
        _ => None,
    }
}

#[test]
fn every_status_and_transition_pair_is_as_the_table_says() {
    let mut legal = 0;
    for from in CommandStatus::ALL {
        for t in Transition::ALL {
            match (step(from, t), expected(from, t)) {
                (Ok(got), Some((to, event))) => {
                    assert_eq!((got.to, got.event), (to, event), "{from} + {t}");
                    legal += 1;
                }
                (Err(e), None) => {
                    assert_eq!(
                        e,
                        IllegalTransition {
                            from,
                            transition: t
                        }
                    );
                    assert!(e.to_string().contains(from.as_str()), "{e}");
                }
                (got, want) => panic!("{from} + {t}: got {got:?}, want {want:?}"),
            }
        }
    }
    // 3 before a claim from each of two statuses, 6 while executing.
    assert_eq!(legal, 12);
    assert_eq!(CommandStatus::ALL.len() * Transition::ALL.len(), 72);
}

#[test]
fn terminal_statuses_are_the_five_outcomes() {
    let terminal: Vec<&str> = CommandStatus::ALL
        .into_iter()
        .filter(|s| s.is_terminal())
        .map(CommandStatus::as_str)
        .collect();
    assert_eq!(
        terminal,
        ["enviado", "completado", "fallido", "ambiguo", "cancelado"]
    );
}

#[test]
fn sources_are_the_compare_and_set_conditions() {
    use CommandStatus::*;
    assert_eq!(Transition::Cancel.sources(), [Accepted, Queued]);
    assert_eq!(Transition::Claim.sources(), [Accepted, Queued]);
    assert_eq!(Transition::Expired.sources(), [Accepted, Queued]);
    assert_eq!(Transition::LeaseExpired.sources(), [Executing]);
    for outcome in [
        Outcome::Sent,
        Outcome::Completed,
        Outcome::Failed,
        Outcome::Ambiguous,
        Outcome::Deferred,
    ] {
        assert_eq!(Transition::Report(outcome).sources(), [Executing]);
    }
}

#[test]
fn the_automatic_transitions_fix_their_stage() {
    assert_eq!(Transition::Expired.fixed_stage(), Some(Stage::Before));
    assert_eq!(
        Transition::LeaseExpired.fixed_stage(),
        Some(Stage::Boundary)
    );
    assert_eq!(
        Transition::Report(Outcome::Ambiguous).fixed_stage(),
        Some(Stage::Boundary)
    );
    assert_eq!(Transition::Report(Outcome::Failed).fixed_stage(), None);
    assert_eq!(Transition::Cancel.fixed_stage(), None);
}

#[test]
fn spellings_come_back() {
    for s in CommandStatus::ALL {
        assert_eq!(CommandStatus::parse(s.as_str()), Some(s));
    }
    for s in Stage::ALL {
        assert_eq!(Stage::parse(s.as_str()), Some(s));
    }
    assert_eq!(CommandStatus::parse("ACEPTADO"), None);
    assert_eq!(Stage::parse("server"), None);
}
