use chrono::TimeDelta;
use proptest::prelude::*;

use super::*;
use crate::{
    delivery::{Decision, ErrorCode, Outcome, RetryPolicy},
    time,
};

const S: fn(u64) -> Duration = Duration::from_secs;
const MS: fn(u64) -> Duration = Duration::from_millis;

fn t0() -> Timestamp {
    time::parse("2026-10-24T15:08:13Z").unwrap()
}

fn at(ms: i64) -> Timestamp {
    t0() + TimeDelta::milliseconds(ms)
}

fn lowest() -> Jitter {
    Jitter::from_unit(0.0)
}

fn highest() -> Jitter {
    Jitter::from_unit(1.0)
}

fn waits(ladder: &Ladder, draw: Jitter) -> Vec<Duration> {
    (1..=ladder.delays().len() as u32)
        .map(|n| ladder.wait(n, draw))
        .collect()
}

/// The attempt times when every attempt fails at once, as offsets from the
/// first in seconds.
fn offsets(ladder: &Ladder, draw: Jitter) -> Vec<i64> {
    ladder
        .attempt_times(t0(), || draw)
        .iter()
        .map(|t| (*t - t0()).num_seconds())
        .collect()
}

#[test]
fn visito_is_the_seeds_table_exactly() {
    let l = &VISITO_V1;
    let nominal = [S(60), S(300), S(1800), S(7200), S(28_800), S(86_400)];
    // No draw moves a Visito retry: the seed names exact delays.
    for draw in [lowest(), Jitter::NONE, highest()] {
        assert_eq!(waits(l, draw), nominal);
    }
    // Seven attempts in all, the last 34 h 36 min after the first.
    assert_eq!(
        offsets(l, Jitter::NONE),
        [0, 60, 360, 2160, 9360, 38_160, 124_560]
    );
    assert_eq!(124_560, 34 * 3600 + 36 * 60);
    // The seventh failure ends it, however young the delivery is.
    assert_eq!(
        l.next_due(7, t0(), at(1), Jitter::NONE),
        NextAttempt::Exhausted
    );
    assert_eq!(
        l.next_due(6, t0(), at(1), Jitter::NONE),
        NextAttempt::Retry {
            wait: S(86_400),
            due_at: at(1 + 86_400_000)
        }
    );
}

#[test]
fn asixto_is_seven_attempts_in_ten_hours_drawn_from_half_to_all() {
    let l = &ASIXTO_V1;
    let nominal: Vec<Duration> = l.delays().to_vec();
    assert_eq!(
        nominal,
        [S(60), S(240), S(1500), S(5400), S(10_800), S(18_000)]
    );
    assert_eq!(nominal.iter().sum::<Duration>(), S(10 * 3600));
    // The draw 0 gives half, the top of [0, 1) all but the last millisecond.
    assert_eq!(
        waits(l, lowest()),
        [S(30), S(120), S(750), S(2700), S(5400), S(9000)]
    );
    assert_eq!(
        waits(l, highest()),
        [
            MS(59_999),
            MS(239_999),
            MS(1_499_999),
            MS(5_399_999),
            MS(10_799_999),
            MS(17_999_999)
        ]
    );
    assert_eq!(
        waits(l, Jitter::NONE),
        [S(45), S(180), S(1125), S(4050), S(8100), S(13_500)]
    );
    // Seven attempts; the last 5 h after the first at the lowest draws,
    // just under 10 h at the highest.
    let low = offsets(l, lowest());
    assert_eq!(low, [0, 30, 150, 900, 3600, 9000, 18_000]);
    let high = l.attempt_times(t0(), highest);
    assert_eq!(high.len(), 7);
    assert_eq!(
        *high.last().unwrap() - t0(),
        TimeDelta::milliseconds(36_000_000 - 6)
    );
    assert_eq!(
        l.next_due(7, t0(), at(1), Jitter::NONE),
        NextAttempt::Exhausted
    );
}

#[test]
fn motor_is_the_contracts_schedule_until_72_hours() {
    let l = &MOTOR_V1;
    assert_eq!(
        waits(l, Jitter::NONE),
        [S(1), S(5), S(30), S(120), S(600), S(3600)]
    );
    assert_eq!(
        waits(l, lowest()),
        [MS(800), S(4), S(24), S(96), S(480), S(2880)]
    );
    assert_eq!(l.wait(40, Jitter::NONE), S(3600));
    assert_eq!(l.wait(0, Jitter::NONE), S(1));
    // At the nominal delays: 12 min 36 s of short steps, then hourly until
    // a failure at or past 72 h ends it.
    let times = offsets(l, Jitter::NONE);
    assert_eq!(&times[..7], [0, 1, 6, 36, 156, 756, 4356]);
    let last = *times.last().unwrap();
    assert!((72 * 3600..73 * 3600).contains(&last), "{last}");
    assert!(times[times.len() - 2] < 72 * 3600);
    assert_eq!(times.len(), 6 + 72);
    // The age, not the count, ends it.
    assert!(matches!(
        l.next_due(1000, t0(), at(72 * 3_600_000 - 1), Jitter::NONE),
        NextAttempt::Retry { .. }
    ));
    assert_eq!(
        l.next_due(1, t0(), at(72 * 3_600_000), Jitter::NONE),
        NextAttempt::Exhausted
    );
}

#[test]
fn motor_matches_the_production_policy_on_a_table() {
    let policy = RetryPolicy::production();
    assert_eq!(MOTOR_V1.delays().len(), 6);
    for n in 0..=9u32 {
        assert_eq!(MOTOR_V1.nominal(n), policy.nominal(n), "attempt {n}");
    }
    assert_eq!(
        MOTOR_V1.limit(),
        Limit::MaxAge(policy.give_up_after()),
        "the same horizon"
    );
}

/// What `decide` does after a retryable failure without `Retry-After`.
fn decide(attempt: u32, created: Timestamp, now: Timestamp, draw: Jitter) -> NextAttempt {
    let outcome = Outcome::Retry {
        error: ErrorCode::Http(503),
        retry_after: None,
    };
    match RetryPolicy::production().decide(created, now, attempt, outcome, draw) {
        Decision::Retry { wait, due_at, .. } => NextAttempt::Retry { wait, due_at },
        Decision::Fail { .. } => NextAttempt::Exhausted,
        other => panic!("a retryable failure decided {other:?}"),
    }
}

proptest! {
    /// Motor's ladder is today's `decide`, to the millisecond, for any
    /// attempt, age and draw.
    #[test]
    fn motor_ladder_is_todays_decide(
        attempt in 0u32..200,
        age_ms in 0i64..(80 * 3_600_000),
        unit in 0.0f64..1.0,
    ) {
        let now = at(age_ms);
        let draw = Jitter::from_unit(unit);
        prop_assert_eq!(MOTOR_V1.next_due(attempt, t0(), now, draw), decide(attempt, t0(), now, draw));
    }

    /// Every ladder's wait stays in its band and grows with the draw.
    #[test]
    fn waits_stay_in_their_band(
        which in 0usize..3,
        attempt in 1u32..10,
        a in 0.0f64..1.0,
        b in 0.0f64..1.0,
    ) {
        let l = Ladder::ALL[which];
        let nominal = l.nominal(attempt);
        let (lo, hi) = (a.min(b), a.max(b));
        let w = l.wait(attempt, Jitter::from_unit(lo));
        prop_assert!(w <= l.wait(attempt, Jitter::from_unit(hi)));
        match l.jitter() {
            JitterMode::Symmetric { percent } => {
                let spread = nominal * u32::from(percent) / 100;
                prop_assert!(w >= nominal - spread && w <= nominal + spread);
            }
            JitterMode::HalfToFull => prop_assert!(w >= nominal / 2 && w < nominal),
        }
    }
}

#[test]
fn the_decide_boundaries_by_hand() {
    // At exactly 72 h both give up; a millisecond before, both retry.
    for age in [72 * 3_600_000 - 1, 72 * 3_600_000, 72 * 3_600_000 + 1] {
        for draw in [lowest(), Jitter::NONE, highest()] {
            for attempt in [0, 1, 6, 7, 100] {
                assert_eq!(
                    MOTOR_V1.next_due(attempt, t0(), at(age), draw),
                    decide(attempt, t0(), at(age), draw)
                );
            }
        }
    }
    assert!(matches!(
        decide(1, t0(), at(72 * 3_600_000 - 1), Jitter::NONE),
        NextAttempt::Retry { .. }
    ));
    assert_eq!(
        decide(1, t0(), at(72 * 3_600_000), Jitter::NONE),
        NextAttempt::Exhausted
    );
}

#[test]
fn ladder_ids_round_trip_and_refuse_the_unknown() {
    for l in Ladder::ALL {
        let stored = l.id().to_string();
        let back: LadderId = stored.parse().unwrap();
        assert_eq!(back, l.id());
        assert_eq!(Ladder::by_id(back), Some(l));
    }
    for l in Ladder::ALL {
        let json = serde_json::to_string(&l.id()).unwrap();
        assert_eq!(json, format!("\"{}\"", l.id()));
        assert_eq!(serde_json::from_str::<LadderId>(&json).unwrap(), l.id());
    }
    for bad in [r#""motor@9""#, r#""""#, "1", "null"] {
        assert!(serde_json::from_str::<LadderId>(bad).is_err(), "{bad}");
    }
    assert_eq!(MOTOR_V1.id().to_string(), "motor@1");
    assert_eq!(VISITO_V1.id().to_string(), "visito@1");
    assert_eq!(ASIXTO_V1.id().to_string(), "asixto@1");
    for bad in [
        "",
        "motor",
        "motor@",
        "motor@2",
        "motor@+1",
        "motor@ 1",
        "Motor@1",
        "stripe@1",
        "visito@01x",
        "asixto@99999999",
    ] {
        assert_eq!(
            bad.parse::<LadderId>(),
            Err(UnknownLadder(bad.to_owned())),
            "{bad:?}"
        );
    }
}

#[test]
fn jitter_modes_have_wire_names() {
    assert_eq!(JitterMode::Symmetric { percent: 20 }.as_str(), "simetrica");
    assert_eq!(JitterMode::HalfToFull.as_str(), "mitad_a_total");
}

#[test]
fn a_custom_ladder_is_checked_and_runs_like_a_built_in() {
    let id = VISITO_V1.id();
    let short = Ladder::new(
        id,
        vec![MS(10), MS(50), MS(200)],
        JitterMode::HalfToFull,
        Limit::MaxAttempts(4),
    )
    .unwrap();
    assert_eq!(
        short
            .attempt_times(t0(), lowest)
            .iter()
            .map(|t| (*t - t0()).num_milliseconds())
            .collect::<Vec<_>>(),
        [0, 5, 30, 130]
    );
    let bad = |delays: Vec<Duration>, jitter, limit| Ladder::new(id, delays, jitter, limit);
    let sym = JitterMode::Symmetric { percent: 20 };
    let seven = Limit::MaxAttempts(7);
    assert_eq!(bad(vec![], sym, seven), Err(LadderError::NoDelays));
    for d in [
        Duration::ZERO,
        Duration::from_micros(1500),
        S(11 * 365 * 24 * 3600),
    ] {
        assert_eq!(
            bad(vec![S(1), d], sym, seven),
            Err(LadderError::BadDelay),
            "{d:?}"
        );
    }
    assert_eq!(
        bad(vec![S(1)], JitterMode::Symmetric { percent: 101 }, seven),
        Err(LadderError::SpreadAbove100)
    );
    for limit in [Limit::MaxAttempts(0), Limit::MaxAge(Duration::ZERO)] {
        assert_eq!(bad(vec![S(1)], sym, limit), Err(LadderError::EmptyLimit));
    }
    // A one-attempt ladder never retries.
    let once = Ladder::new(id, vec![S(1)], sym, Limit::MaxAttempts(1)).unwrap();
    assert_eq!(
        once.next_due(1, t0(), t0(), Jitter::NONE),
        NextAttempt::Exhausted
    );
    assert_eq!(
        once.next_due(0, t0(), t0(), Jitter::NONE),
        NextAttempt::Exhausted
    );
}

/// The engine's decision under each built-in ladder, attempt by attempt,
/// with the clock and the draw injected: a receiver that never answers 2xx
/// is tried at the ladder's table, and the failure after the last attempt
/// ends the delivery `<code>_agotada`.
#[test]
fn decide_walks_each_ladder_to_its_end() {
    let retry = Outcome::Retry {
        error: ErrorCode::Http(500),
        retry_after: None,
    };
    // (ladder, draw, attempt offsets from the first in seconds).
    let table: [(&Ladder, Jitter, &[i64]); 4] = [
        (
            &VISITO_V1,
            Jitter::from_unit(0.37),
            &[0, 60, 360, 2_160, 9_360, 38_160, 124_560],
        ),
        (
            &ASIXTO_V1,
            lowest(),
            &[0, 30, 150, 900, 3_600, 9_000, 18_000],
        ),
        (
            &ASIXTO_V1,
            Jitter::NONE,
            // Three quarters of each nominal wait (draw 0.5).
            &[0, 45, 225, 1_350, 5_400, 13_500, 27_000],
        ),
        (&MOTOR_V1, Jitter::NONE, &[0, 1, 6, 36, 156, 756, 4_356]),
    ];
    for (ladder, draw, expected) in table {
        let mut now = t0();
        let mut times = vec![0];
        for attempt in 1.. {
            match ladder.decide(t0(), now, attempt, retry, draw, S(3600)) {
                Decision::Retry {
                    next_attempt,
                    due_at,
                    wait,
                    tier,
                    ..
                } => {
                    assert_eq!(next_attempt, attempt + 1);
                    assert_eq!(due_at, now + TimeDelta::from_std(wait).unwrap());
                    assert_eq!(tier, crate::delivery::Tier::for_delay(wait));
                    now = due_at;
                    times.push((now - t0()).num_seconds());
                    if times.len() == expected.len() {
                        break;
                    }
                }
                other => panic!("{} attempt {attempt}: {other:?}", ladder.id()),
            }
        }
        assert_eq!(times, expected, "{}", ladder.id());
        if let Limit::MaxAttempts(max) = ladder.limit() {
            assert_eq!(
                ladder.decide(t0(), now, max, retry, draw, S(3600)),
                Decision::Fail {
                    error: LastError::exhausted(ErrorCode::Http(500))
                },
                "{}: the {max}th failure ends it",
                ladder.id()
            );
        }
    }
}

#[test]
fn decide_stretches_by_retry_after_and_passes_other_outcomes() {
    let asked = |secs| Outcome::Retry {
        error: ErrorCode::Http(429),
        retry_after: Some(S(secs)),
    };
    // Visito's first wait is 60 s: a Retry-After of 90 s stretches it, one
    // of 10 s does not shorten it, one of 2 h is capped at the cap.
    let wait = |outcome| match VISITO_V1.decide(t0(), t0(), 1, outcome, Jitter::NONE, S(3600)) {
        Decision::Retry { wait, .. } => wait,
        other => panic!("{other:?}"),
    };
    assert_eq!(wait(asked(90)), S(90));
    assert_eq!(wait(asked(10)), S(60));
    assert_eq!(wait(asked(7200)), S(3600));
    assert_eq!(
        VISITO_V1.decide(t0(), t0(), 3, Outcome::Delivered, Jitter::NONE, S(3600)),
        Decision::Delivered
    );
    let fail = Outcome::Fail {
        error: ErrorCode::Http(400),
    };
    assert_eq!(
        ASIXTO_V1.decide(t0(), t0(), 1, fail, Jitter::NONE, S(3600)),
        Decision::Fail {
            error: LastError::new(ErrorCode::Http(400))
        }
    );
}

#[test]
fn a_stand_in_parses_from_its_one_line_form() {
    let l = Ladder::parse_stand_in("visito@1=300,600,1200;simetrica=0;intentos=4").unwrap();
    assert_eq!(l.id(), VISITO_V1.id());
    assert_eq!(l.delays(), [MS(300), MS(600), MS(1200)]);
    assert_eq!(l.jitter(), JitterMode::Symmetric { percent: 0 });
    assert_eq!(l.limit(), Limit::MaxAttempts(4));
    let l = Ladder::parse_stand_in("asixto@1=200;mitad_a_total;edad_ms=5000").unwrap();
    assert_eq!(l.jitter(), JitterMode::HalfToFull);
    assert_eq!(l.limit(), Limit::MaxAge(MS(5000)));
    for bad in [
        "",
        "visito@1",
        "visito@2=1;simetrica=0;intentos=1",
        "visito@1=;simetrica=0;intentos=1",
        "visito@1=1,x;simetrica=0;intentos=1",
        "visito@1=1;simetrica=101;intentos=1",
        "visito@1=1;uniforme;intentos=1",
        "visito@1=1;simetrica=0;intentos=0",
        "visito@1=1;simetrica=0;veces=3",
        "visito@1=1;simetrica=0;intentos=3;mas",
    ] {
        assert!(Ladder::parse_stand_in(bad).is_err(), "{bad:?}");
    }
}
