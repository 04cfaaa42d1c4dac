//! Insert and every transition, each with its ledger event.

use motor_domain::command::{CommandKind, Report, Stage};

use super::*;

#[tokio::test]
async fn a_send_is_born_queued_with_its_accepted_event_and_its_record() {
    let db = Db::new().await;
    let now = now();
    let accepted = db
        .insert(&send("549", "hola", now), Some("k1"), now)
        .await
        .unwrap();
    assert!(accepted.created);
    let c = accepted.command;
    assert_eq!(
        (status(&c), c.kind, c.next_try, c.generation, c.claims),
        ("en_cola", CommandKind::Message, Some(now), 1, 0)
    );
    assert_eq!(c.chat.as_deref(), Some("549"));
    assert_eq!(c.content, Some(json!({"texto": "hola"})));
    assert_eq!(c.parameters, None);
    assert_eq!(c.idempotency_key.as_deref(), Some("k1"));
    assert_eq!(db.get(c.id).await, c);

    let id = c.id.to_string();
    assert_eq!(
        db.ledger().await,
        [(
            1,
            "command.accepted".into(),
            Some(id.clone()),
            json!({"command_id": id, "tipo": "mensaje", "chat": "549"})
        )]
    );
    assert_eq!(
        db.command_records().await,
        [(
            db.instance.to_string(),
            json!({"command_id": id, "instance_id": db.instance.to_string(),
                   "tipo": "mensaje", "next_try": ts(now)})
        )]
    );
    db.drop_it().await;
}

#[tokio::test]
async fn control_commands_are_born_accepted_and_append_nothing_remote_ones_append() {
    let db = Db::new().await;
    let now = now();
    let control = db
        .insert(&operation("reconectar", now), None, now)
        .await
        .unwrap();
    assert_eq!(status(&control.command), "aceptado");
    assert_eq!(control.command.next_try, None);
    assert_eq!(control.command.chat, None);
    assert!(db.ledger().await.is_empty());
    let remote = db
        .insert(&operation("grupos", now), None, now)
        .await
        .unwrap();
    assert_eq!(status(&remote.command), "aceptado");
    assert_eq!(
        remote.command.parameters,
        Some(json!({"operacion": "unirse", "grupo": "g1"}))
    );
    let ledger = db.ledger().await;
    assert_eq!(ledger.len(), 1);
    assert_eq!(ledger[0].1, "command.accepted");
    assert_eq!(ledger[0].2, Some(remote.command.id.to_string()));
    // Both reach executors, in acceptance order.
    let records = db.command_records().await;
    let ids: Vec<&str> = records
        .iter()
        .map(|(_, p)| p["command_id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        [
            control.command.id.to_string(),
            remote.command.id.to_string()
        ]
    );
    db.drop_it().await;
}

#[tokio::test]
async fn the_key_answers_a_repeat_and_refuses_other_content_even_after_a_relink() {
    let db = Db::new().await;
    let now = now();
    let one = RawOptions {
        expected_generation: Some(1),
        ..RawOptions::default()
    };
    let first = db
        .insert(&send_with("549", "hola", one, now), Some("k"), now)
        .await
        .unwrap();
    db.relink().await;
    // Resolved before the generation check: the same command, not a 409.
    let again = db
        .insert(
            &send_with("549", "hola", one, now),
            Some("k"),
            later(now, 5),
        )
        .await
        .unwrap();
    assert!(!again.created);
    assert_eq!(again.command, first.command);
    for other in [send("549", "chau", now), send("550", "hola", now)] {
        match db.insert(&other, Some("k"), now).await {
            Err(CommandError::KeyConflict { existing }) => assert_eq!(existing, first.command.id),
            got => panic!("expected a conflict, got {got:?}"),
        }
    }
    // Another key with the old generation is refused.
    match db
        .insert(&send_with("549", "hola", one, now), Some("k2"), now)
        .await
    {
        Err(CommandError::GenerationMismatch { expected, actual }) => {
            assert_eq!((expected, actual), (1, 2))
        }
        got => panic!("expected a generation mismatch, got {got:?}"),
    }
    let two = RawOptions {
        expected_generation: Some(2),
        ..RawOptions::default()
    };
    let fresh = db
        .insert(&send_with("549", "hola", two, now), Some("k2"), now)
        .await
        .unwrap();
    assert_eq!(fresh.command.generation, 2);
    // One command.accepted per stored command, nothing for the refusals.
    assert_eq!(db.ledger().await.len(), 2);
    db.drop_it().await;
}

#[tokio::test]
async fn another_apps_instance_and_command_are_not_found() {
    let db = Db::new().await;
    let now = now();
    let stranger = AppId::new();
    db.add_app(stranger).await;
    let mut tx = db.pool.begin().await.unwrap();
    let refused = commands::insert(
        &mut tx,
        stranger,
        db.instance,
        &operation("pausar", now),
        None,
        now,
    )
    .await;
    assert!(matches!(refused, Err(CommandError::InstanceNotFound)));
    let missing = commands::insert(
        &mut tx,
        db.app,
        InstanceId::new(),
        &operation("pausar", now),
        None,
        now,
    )
    .await;
    assert!(matches!(missing, Err(CommandError::InstanceNotFound)));
    drop(tx);
    let c = db
        .insert(&operation("pausar", now), None, now)
        .await
        .unwrap()
        .command;
    let mut tx = db.pool.begin().await.unwrap();
    let cancel = commands::cancel(&mut tx, stranger, c.id, now).await;
    assert!(matches!(cancel, Err(CommandError::NotFound)));
    let lease = std::time::Duration::from_secs(5);
    let claim = commands::claim(&mut tx, stranger, c.id, lease, now).await;
    assert!(matches!(claim, Err(CommandError::NotFound)));
    assert!(commands::get(&mut *tx, Some(stranger), c.id)
        .await
        .unwrap()
        .is_none());
    drop(tx);
    assert_eq!(status(&db.get(c.id).await), "aceptado");
    db.drop_it().await;
}

#[tokio::test]
async fn cancel_only_before_a_claim_and_once() {
    let db = Db::new().await;
    let now = now();
    let c = db.sent("hola", "k", now).await;
    let mut tx = db.pool.begin().await.unwrap();
    let cancelled = commands::cancel(&mut tx, db.app, c.id, now).await.unwrap();
    assert_eq!(status(&cancelled), "cancelado");
    let twice = commands::cancel(&mut tx, db.app, c.id, now)
        .await
        .unwrap_err();
    assert!(is_illegal(&twice, CommandStatus::Cancelled), "{twice:?}");
    tx.commit().await.unwrap();
    let claim = db.claim(c.id, 30, now).await.unwrap_err();
    assert!(is_illegal(&claim, CommandStatus::Cancelled), "{claim:?}");

    let running = db
        .insert(&operation("pausar", now), None, now)
        .await
        .unwrap()
        .command;
    db.claimed(running.id, now).await;
    let mut tx = db.pool.begin().await.unwrap();
    let late = commands::cancel(&mut tx, db.app, running.id, now)
        .await
        .unwrap_err();
    assert!(is_illegal(&late, CommandStatus::Executing), "{late:?}");
    drop(tx);

    let id = c.id.to_string();
    let types: Vec<(String, Option<String>)> = db
        .ledger()
        .await
        .into_iter()
        .map(|(_, t, c, _)| (t, c))
        .collect();
    assert_eq!(
        types,
        [
            ("command.accepted".into(), Some(id.clone())),
            ("command.cancelled".into(), Some(id)),
        ]
    );
    db.drop_it().await;
}

#[tokio::test]
async fn a_send_claimed_and_reported_sent_tells_its_story_in_seq_order() {
    let db = Db::new().await;
    let now = now();
    let c = db.sent("hola", "k", now).await;
    let (claimed, lease) = db.claimed(c.id, now).await;
    assert_eq!(
        (status(&claimed), claimed.claims, claimed.next_try),
        ("ejecutando", 1, None)
    );
    assert_eq!(claimed.lease_until, Some(later(now, 30)));
    let accepted_at = later(now, 1);
    let sent = Report::Sent {
        provider_message_id: "wamid.1".into(),
        chat: "549@s.whatsapp.net".into(),
        accepted_at,
    };
    let mut tx = db.pool.begin().await.unwrap();
    let wrong = commands::report(&mut tx, db.app, c.id, Uuid::new_v4(), &sent, now).await;
    assert!(matches!(wrong, Err(CommandError::LeaseLost)), "{wrong:?}");
    let done = commands::report(&mut tx, db.app, c.id, lease, &sent, now)
        .await
        .unwrap();
    tx.commit().await.unwrap();
    assert_eq!(status(&done), "enviado");
    assert_eq!(done.provider_message_id.as_deref(), Some("wamid.1"));
    assert_eq!(done.accepted_at, Some(accepted_at));
    assert_eq!(done.lease_until, None);
    let id = c.id.to_string();
    let ledger = db.ledger().await;
    assert_eq!(ledger.len(), 2);
    assert_eq!((ledger[1].0, ledger[1].1.as_str()), (2, "message.sent"));
    assert_eq!(ledger[1].2, Some(id.clone()));
    assert_eq!(
        ledger[1].3,
        json!({"command_id": id, "tipo": "mensaje", "chat": "549@s.whatsapp.net",
               "provider_message_id": "wamid.1", "aceptado_en": ts(accepted_at)})
    );
    // Terminal: a second report is refused.
    let mut tx = db.pool.begin().await.unwrap();
    let again = commands::report(&mut tx, db.app, c.id, lease, &sent, now)
        .await
        .unwrap_err();
    assert!(is_illegal(&again, CommandStatus::Sent), "{again:?}");
    drop(tx);
    db.drop_it().await;
}

#[tokio::test]
async fn failed_ambiguous_and_completed_reports_append_their_events() {
    let db = Db::new().await;
    let now = now();
    let failing = db.sent("a", "f", now).await;
    let doubtful = db.sent("b", "a", now).await;
    let control = db
        .insert(&operation("reanudar", now), None, now)
        .await
        .unwrap()
        .command;
    let reports = [
        (
            failing.id,
            Report::Failed {
                error_code: "numero_invalido".into(),
                stage: Stage::Server,
                server_code: Some("131026".into()),
                provider_message_id: None,
            },
        ),
        (
            doubtful.id,
            Report::Ambiguous {
                error_code: Some("timeout".into()),
            },
        ),
        (control.id, Report::Completed),
    ];
    let mut finished = Vec::new();
    for (id, report) in &reports {
        let (_, lease) = db.claimed(*id, now).await;
        let mut tx = db.pool.begin().await.unwrap();
        finished.push(
            commands::report(&mut tx, db.app, *id, lease, report, now)
                .await
                .unwrap(),
        );
        tx.commit().await.unwrap();
    }
    type Summary<'a> = (&'a str, Option<&'a str>, Option<Stage>, Option<&'a str>);
    let summary: Vec<Summary<'_>> = finished
        .iter()
        .map(|c| {
            (
                status(c),
                c.error_code.as_deref(),
                c.stage,
                c.server_code.as_deref(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            (
                "fallido",
                Some("numero_invalido"),
                Some(Stage::Server),
                Some("131026")
            ),
            ("ambiguo", Some("timeout"), Some(Stage::Boundary), None),
            ("completado", None, None, None),
        ]
    );
    let ledger = db.ledger().await;
    let tail: Vec<(i64, &str)> = ledger[2..]
        .iter()
        .map(|(s, t, _, _)| (*s, t.as_str()))
        .collect();
    assert_eq!(tail, [(3, "command.failed"), (4, "command.ambiguous")]);
    assert_eq!(ledger[2].3["stage"], "servidor");
    assert_eq!(ledger[2].3["server_code"], "131026");
    assert_eq!(ledger[3].3["stage"], "frontera");
    db.drop_it().await;
}

#[tokio::test]
async fn a_deferral_queues_it_again_until_next_try_under_a_new_lease() {
    let db = Db::new().await;
    let now = now();
    let c = db.sent("hola", "k", now).await;
    let (_, first) = db.claimed(c.id, now).await;
    let next_try = later(now, 60);
    let deferred = db
        .report(c.id, first, &Report::Deferred { next_try }, now)
        .await
        .unwrap();
    assert_eq!(
        (status(&deferred), deferred.next_try),
        ("en_cola", Some(next_try))
    );
    assert_eq!(deferred.lease_until, None);
    // Handed to executors again, due at next_try.
    let records = db.command_records().await;
    assert_eq!(records.len(), 2);
    assert_eq!(records[1].1["next_try"], ts(next_try));

    match db.claim(c.id, 30, later(now, 59)).await {
        Err(CommandError::NotDue(at)) => assert_eq!(at, next_try),
        got => panic!("expected not due, got {got:?}"),
    }
    let (again, second) = db.claimed(c.id, next_try).await;
    assert_eq!(again.claims, 2);
    assert_ne!(first, second);
    // The first lease is no longer the command's.
    let mut tx = db.pool.begin().await.unwrap();
    let stale = commands::report(
        &mut tx,
        db.app,
        c.id,
        first,
        &Report::Ambiguous { error_code: None },
        now,
    )
    .await;
    assert!(matches!(stale, Err(CommandError::LeaseLost)), "{stale:?}");
    drop(tx);
    // No event for a claim or a deferral.
    assert_eq!(db.ledger().await.len(), 1);
    db.drop_it().await;
}

#[tokio::test]
async fn a_lease_beyond_the_calendar_is_clamped() {
    let db = Db::new().await;
    let now = now();
    let c = db
        .insert(&operation("pausar", now), None, now)
        .await
        .unwrap()
        .command;
    match db.claim(c.id, u64::MAX, now).await.unwrap() {
        Claimed::Claimed { command, .. } => {
            assert!(command.lease_until.unwrap() > later(now, 86_400 * 365 * 1000))
        }
        other => panic!("not claimed: {other:?}"),
    }
    db.drop_it().await;
}

/// A claim alone (one statement, no transaction) takes a due, unbound
/// command on one of its instances, exactly as a claim would; it leaves
/// everything else as it is for the claim's transaction: a command bound
/// to a generation, one on another instance, one not due yet, one
/// already claimed, one whose `expires_at` passed (not expired by it),
/// and another app's.
#[tokio::test]
async fn a_claim_alone_takes_only_an_unbound_due_command_on_its_instances() {
    let db = Db::new().await;
    let now = now();
    let lease = std::time::Duration::from_secs(30);
    let alone = |id, app, now, instances: Vec<InstanceId>| {
        let pool = db.pool.clone();
        async move {
            commands::claim_alone(&pool, app, id, lease, now, &instances)
                .await
                .unwrap()
        }
    };

    let c = db.sent("hola", "k1", now).await;
    let (claimed, token) = alone(c.id, db.app, now, vec![db.instance])
        .await
        .expect("an unbound due command is claimed alone");
    assert_eq!((status(&claimed), claimed.claims), ("ejecutando", 1));
    assert_eq!(claimed.lease_until, Some(later(now, 30)));
    // Its lease is the one a report must present.
    let done = db.report(c.id, token, &Report::Completed, now).await;
    assert_eq!(status(&done.unwrap()), "completado");
    // Claimed once: a second claim alone takes nothing.
    let d = db.sent("otra", "k2", now).await;
    assert!(alone(d.id, db.app, now, vec![]).await.is_some());
    assert!(alone(d.id, db.app, now, vec![]).await.is_none());
    assert_eq!(db.get(d.id).await.claims, 1);

    let bound = send_with(
        "549",
        "ligado",
        RawOptions {
            expected_generation: Some(1),
            ..RawOptions::default()
        },
        now,
    );
    let bound = db.insert(&bound, Some("k3"), now).await.unwrap().command;
    assert!(alone(bound.id, db.app, now, vec![]).await.is_none());
    // The claim's transaction still takes it.
    db.claimed(bound.id, now).await;

    let elsewhere = db.sent("fuera", "k4", now).await;
    assert!(alone(elsewhere.id, db.app, now, vec![InstanceId::new()])
        .await
        .is_none());
    assert!(alone(elsewhere.id, AppId::new(), now, vec![])
        .await
        .is_none());
    assert_eq!(status(&db.get(elsewhere.id).await), "en_cola");

    let expires = ts(later(now, 10));
    let expiring = send_with(
        "549",
        "vence",
        RawOptions {
            expires_at: Some(&expires),
            ..RawOptions::default()
        },
        now,
    );
    let expiring = db.insert(&expiring, Some("k5"), now).await.unwrap().command;
    assert!(alone(expiring.id, db.app, later(now, 11), vec![])
        .await
        .is_none());
    assert_eq!(status(&db.get(expiring.id).await), "en_cola");

    // Deferred to next_try: not due before it, due at it.
    let deferred = db.sent("diferido", "k6", now).await;
    let (_, first) = db.claimed(deferred.id, now).await;
    let next_try = later(now, 60);
    db.report(deferred.id, first, &Report::Deferred { next_try }, now)
        .await
        .unwrap();
    assert!(alone(deferred.id, db.app, later(now, 59), vec![])
        .await
        .is_none());
    let (again, _) = alone(deferred.id, db.app, next_try, vec![db.instance])
        .await
        .expect("due again at next_try");
    assert_eq!(again.claims, 2);
    db.drop_it().await;
}
