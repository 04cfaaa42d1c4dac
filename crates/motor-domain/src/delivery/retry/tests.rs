use chrono::TimeDelta;
use proptest::prelude::*;
use rand::{rngs::StdRng, SeedableRng};

use super::*;
use crate::{delivery::TransportFailure, time};

const S: fn(u64) -> Duration = Duration::from_secs;
const MS: fn(u64) -> Duration = Duration::from_millis;

fn t0() -> Timestamp {
    time::parse("2026-10-24T15:08:13Z").unwrap()
}

fn at(ms: i64) -> Timestamp {
    t0() + TimeDelta::milliseconds(ms)
}

fn p() -> RetryPolicy {
    RetryPolicy::production()
}

fn http_503(retry_after: Option<Duration>) -> Outcome {
    Outcome::Retry {
        error: ErrorCode::Http(503),
        retry_after,
    }
}

/// The shortest and longest jitter a caller can pass.
fn lowest() -> Jitter {
    Jitter::from_unit(0.0)
}

fn highest() -> Jitter {
    Jitter::from_unit(1.0)
}

#[test]
fn production_is_the_contract() {
    let nominal: Vec<_> = (0..=9).map(|n| p().nominal(n).as_secs()).collect();
    assert_eq!(nominal, [1, 1, 5, 30, 120, 600, 3600, 3600, 3600, 3600]);
    let tiers: Vec<_> = (1..=8).map(|n| p().step_tier(n)).collect();
    use Tier::*;
    assert_eq!(tiers, [S1, S5, S30, M2, M10, H1, H1, H1]);
    assert_eq!(p().step_tier(u32::MAX), H1);
    assert_eq!(p().retry_after_cap(), S(3600));
    assert_eq!(p().give_up_after(), S(72 * 3600));
    for t in Tier::ALL {
        assert_eq!(p().tier_delay(t), t.nominal());
    }
}

#[test]
fn jitter_is_twenty_percent_either_way() {
    let low: Vec<_> = (1..=7).map(|n| p().scheduled(n, lowest())).collect();
    assert_eq!(low, [MS(800), S(4), S(24), S(96), S(480), S(2880), S(2880)]);
    let none: Vec<_> = (1..=7).map(|n| p().scheduled(n, Jitter::NONE)).collect();
    assert_eq!(none, [S(1), S(5), S(30), S(120), S(600), S(3600), S(3600)]);
    // The top of the range is 1.2 × nominal, less the last millisecond.
    let high: Vec<_> = (1..=7).map(|n| p().scheduled(n, highest())).collect();
    assert_eq!(
        high,
        [
            MS(1_199),
            MS(5_999),
            MS(35_999),
            MS(143_999),
            MS(719_999),
            MS(4_319_999),
            MS(4_319_999)
        ]
    );
}

#[test]
fn jitter_from_odd_numbers_stays_in_range() {
    assert_eq!(Jitter::from_unit(f64::NAN), Jitter::NONE);
    assert_eq!(Jitter::from_unit(-3.0).unit(), 0.0);
    assert_eq!(Jitter::from_unit(f64::NEG_INFINITY).unit(), 0.0);
    assert!(Jitter::from_unit(1.0).unit() < 1.0);
    assert!(Jitter::from_unit(f64::INFINITY).unit() < 1.0);
    assert_eq!(Jitter::from_unit(0.25).unit(), 0.25);
}

#[test]
fn random_jitter_is_deterministic_under_a_seed_and_spreads() {
    let draw = |seed| {
        let mut rng = StdRng::seed_from_u64(seed);
        (0..1_000)
            .map(|_| p().scheduled(1, Jitter::random(&mut rng)))
            .collect::<Vec<_>>()
    };
    assert_eq!(draw(7), draw(7));
    assert_ne!(draw(7), draw(8));
    let waits = draw(7);
    assert!(waits.iter().all(|w| (MS(800)..=MS(1_200)).contains(w)));
    assert!(waits.iter().any(|w| *w < MS(850)), "never near -20 %");
    assert!(waits.iter().any(|w| *w > MS(1_150)), "never near +20 %");
}

#[test]
fn retry_after_stretches_the_schedule_up_to_an_hour() {
    let none = Jitter::NONE;
    // Longer than the schedule: honoured.
    assert_eq!(p().wait(1, Some(S(120)), none), S(120));
    assert_eq!(p().wait(2, Some(S(35)), none), S(35));
    // Shorter than the schedule: the schedule.
    assert_eq!(p().wait(3, Some(S(10)), none), S(30));
    assert_eq!(p().wait(1, Some(Duration::ZERO), none), S(1));
    // More than an hour: an hour.
    assert_eq!(p().wait(1, Some(S(7200)), none), S(3600));
    // The 1 h step with +20 % jitter is longer than any Retry-After may ask:
    // the schedule stands.
    assert_eq!(p().wait(6, Some(S(7200)), highest()), MS(4_319_999));
    assert_eq!(p().wait(6, Some(S(7200)), lowest()), S(3600));
    // Sub-millisecond waits round up, never down.
    assert_eq!(
        p().wait(1, Some(Duration::from_micros(1_500_001)), none),
        MS(1_501)
    );
}

#[test]
fn the_docs_example_503_with_retry_after_35() {
    // intentos_detalle: attempt 2 at 15:08:14 got a 503; the next is at
    // 15:08:49, 35 s later, which the receiver asked for.
    let outcome = Outcome::from_status(503, Some("35"), at(1_000));
    let decision = p().decide(t0(), at(1_000), 2, outcome, Jitter::NONE);
    assert_eq!(
        decision,
        Decision::Retry {
            error: ErrorCode::Http(503),
            next_attempt: 3,
            wait: S(35),
            due_at: time::parse("2026-10-24T15:08:49Z").unwrap(),
            tier: Tier::S30,
        }
    );
    assert_eq!(decision.state(), DeliveryState::Pending);
    assert_eq!(decision.last_error().unwrap().to_string(), "http_503");
}

#[test]
fn a_retry_goes_to_its_steps_tier_and_a_long_retry_after_further() {
    let decide = |attempt, retry_after, jitter| match p().decide(
        t0(),
        t0(),
        attempt,
        http_503(retry_after),
        jitter,
    ) {
        Decision::Retry { tier, .. } => tier,
        other => panic!("{other:?}"),
    };
    // Jitter never moves a retry out of its step's tier, even below it.
    for n in 1..=8 {
        for j in [lowest(), Jitter::NONE, highest()] {
            assert_eq!(decide(n, None, j), p().step_tier(n));
        }
    }
    assert_eq!(decide(1, Some(S(4)), Jitter::NONE), Tier::S1);
    assert_eq!(decide(1, Some(S(5)), Jitter::NONE), Tier::S5);
    assert_eq!(decide(1, Some(S(120)), Jitter::NONE), Tier::M2);
    assert_eq!(decide(1, Some(S(3599)), Jitter::NONE), Tier::M10);
    assert_eq!(decide(1, Some(S(9999)), Jitter::NONE), Tier::H1);
    // A Retry-After that stretches the wait never lowers the tier.
    assert_eq!(decide(3, Some(S(25)), lowest()), Tier::S30);
    // One that does not stretch it changes nothing.
    assert_eq!(decide(5, Some(S(60)), Jitter::NONE), Tier::M10);
}

#[test]
fn every_outcome_decides() {
    let d = |outcome, now| p().decide(t0(), now, 1, outcome, Jitter::NONE);
    let late = at(73 * 3_600_000);

    assert_eq!(d(Outcome::Delivered, at(5)), Decision::Delivered);
    assert_eq!(Decision::Delivered.state(), DeliveryState::Delivered);
    assert_eq!(Decision::Delivered.last_error(), None);

    let suspend = Outcome::from_status(401, None, t0());
    for now in [at(5), late] {
        let decision = d(suspend, now);
        assert_eq!(
            decision,
            Decision::Suspend {
                reason: SuspensionReason::Rejected401,
                error: ErrorCode::Http(401)
            }
        );
        assert_eq!(decision.state(), DeliveryState::Pending);
        assert_eq!(decision.last_error().unwrap().to_string(), "http_401");
    }

    for now in [at(5), late] {
        let decision = d(Outcome::from_status(410, None, t0()), now);
        assert_eq!(decision.state(), DeliveryState::Failed);
        assert_eq!(decision.last_error().unwrap().to_string(), "http_410");
        let decision = d(Outcome::from_status(302, None, t0()), now);
        assert_eq!(decision.last_error().unwrap().to_string(), "redireccion");
        let decision = d(Outcome::from_transport(TransportFailure::BadUrl), now);
        assert_eq!(decision.last_error().unwrap().to_string(), "url");
    }

    let decision = d(Outcome::from_transport(TransportFailure::Timeout), at(5));
    assert_eq!(
        decision,
        Decision::Retry {
            error: ErrorCode::Timeout,
            next_attempt: 2,
            wait: S(1),
            due_at: at(1_005),
            tier: Tier::S1
        }
    );
    let decision = d(Outcome::from_transport(TransportFailure::Timeout), late);
    assert_eq!(decision.state(), DeliveryState::Failed);
    assert_eq!(
        decision.last_error().unwrap().to_string(),
        "timeout_agotada"
    );
    let decision = d(http_503(Some(S(60))), late);
    assert_eq!(
        decision,
        Decision::Fail {
            error: LastError::exhausted(ErrorCode::Http(503))
        }
    );
    assert_eq!(
        decision.last_error().unwrap().to_string(),
        "http_503_agotada"
    );
}

#[test]
fn giving_up_flips_exactly_at_72_hours() {
    let horizon = TimeDelta::hours(72);
    let d = |now| p().decide(t0(), now, 40, http_503(None), Jitter::NONE);
    let one_ns = TimeDelta::nanoseconds(1);
    assert_eq!(d(t0() + horizon - one_ns).state(), DeliveryState::Pending);
    assert_eq!(d(t0() + horizon).state(), DeliveryState::Failed);
    assert_eq!(d(t0() + horizon + one_ns).state(), DeliveryState::Failed);
    // A clock behind the creation time is not 72 h later.
    assert!(!p().exhausted(t0(), t0() - TimeDelta::days(10)));
    assert!(!p().exhausted(t0(), t0()));
}

#[test]
fn a_receiver_that_always_fails_is_given_up_after_72_hours() {
    // Attempts at 0, 1 s, 6 s, 36 s, 156 s, 756 s, then every hour: the
    // 72nd hourly one, at 756 s + 72 h, is the first past the horizon.
    let policy = p();
    let mut now = t0();
    let mut attempt = 1;
    loop {
        match policy.decide(t0(), now, attempt, http_503(None), Jitter::NONE) {
            Decision::Retry {
                next_attempt,
                due_at,
                wait,
                ..
            } => {
                assert_eq!(next_attempt, attempt + 1);
                assert_eq!(due_at - now, TimeDelta::from_std(wait).unwrap());
                assert!(now - t0() < TimeDelta::hours(72));
                attempt = next_attempt;
                now = due_at;
            }
            Decision::Fail { error } => {
                assert_eq!(error.to_string(), "http_503_agotada");
                break;
            }
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(attempt, 78);
    assert_eq!(now - t0(), TimeDelta::seconds(756 + 72 * 3600));
}

#[test]
fn a_short_policy_runs_the_same_rules_in_milliseconds() {
    let short = RetryPolicy::new(
        [MS(10), MS(20), MS(40), MS(80), MS(160), MS(320)],
        S(1),
        S(2),
    )
    .unwrap();
    let steps: Vec<_> = (1..=7).map(|n| short.scheduled(n, Jitter::NONE)).collect();
    assert_eq!(
        steps,
        [MS(10), MS(20), MS(40), MS(80), MS(160), MS(320), MS(320)]
    );
    assert_eq!(short.scheduled(1, lowest()), MS(8));
    assert_eq!(short.wait(1, Some(S(30)), Jitter::NONE), S(1));
    assert_eq!(short.tier_for_wait(MS(100)), Tier::M2);
    assert_eq!(short.tier_for_wait(S(1)), Tier::H1);
    assert_eq!(
        short.decide(t0(), at(500), 2, http_503(Some(MS(100))), Jitter::NONE),
        Decision::Retry {
            error: ErrorCode::Http(503),
            next_attempt: 3,
            wait: MS(100),
            due_at: at(600),
            tier: Tier::M2
        }
    );
    assert_eq!(
        short
            .decide(t0(), at(2_000), 2, http_503(None), Jitter::NONE)
            .last_error()
            .unwrap()
            .to_string(),
        "http_503_agotada"
    );
}

#[test]
fn unusable_policies_are_refused() {
    let ok = [MS(10), MS(20), MS(40), MS(80), MS(160), MS(320)];
    let new = |delays, cap, horizon| RetryPolicy::new(delays, cap, horizon).unwrap_err();
    let mut zero = ok;
    zero[0] = Duration::ZERO;
    assert_eq!(new(zero, S(1), S(2)), PolicyError::DelayNotWholeMillis);
    let mut fraction = ok;
    fraction[2] = Duration::from_micros(40_500);
    assert_eq!(new(fraction, S(1), S(2)), PolicyError::DelayNotWholeMillis);
    let mut flat = ok;
    flat[3] = flat[2];
    assert_eq!(new(flat, S(1), S(2)), PolicyError::DelaysNotIncreasing);
    let mut down = ok;
    down.swap(4, 5);
    assert_eq!(new(down, S(1), S(2)), PolicyError::DelaysNotIncreasing);
    assert_eq!(
        new(ok, Duration::from_nanos(1), S(2)),
        PolicyError::CapNotWholeMillis
    );
    assert_eq!(new(ok, S(1), Duration::ZERO), PolicyError::ZeroHorizon);
    assert_eq!(new(ok, S(1), S(400 * 365 * 86_400)), PolicyError::TooLong);
    let mut huge = ok;
    huge[5] = Duration::MAX;
    assert_eq!(new(huge, S(1), S(2)), PolicyError::TooLong);
    assert_eq!(new(ok, Duration::MAX, S(2)), PolicyError::TooLong);
    let production = Tier::ALL.map(Tier::nominal);
    assert_eq!(
        RetryPolicy::new(production, S(3600), S(72 * 3600)).unwrap(),
        RetryPolicy::production()
    );
}

/// Valid policies: six strictly increasing whole-millisecond delays.
fn policies() -> impl Strategy<Value = RetryPolicy> {
    (
        prop::array::uniform6(1u64..2_000_000),
        0u64..10_000_000,
        1u64..1_000_000_000,
    )
        .prop_map(|(mut steps, cap, horizon)| {
            steps.sort_unstable();
            let mut total = 0;
            let delays = steps.map(|s| {
                total += s;
                MS(total)
            });
            RetryPolicy::new(delays, MS(cap), MS(horizon)).unwrap()
        })
}

proptest! {
    #[test]
    fn the_schedule_stays_within_twenty_percent(attempt in 0u32..1_000, unit in 0.0f64..1.0) {
        let policy = p();
        let nominal = policy.nominal(attempt);
        let wait = policy.scheduled(attempt, Jitter::from_unit(unit));
        prop_assert!(wait >= nominal * 4 / 5, "{wait:?} < 0.8 × {nominal:?}");
        prop_assert!(wait <= nominal * 6 / 5, "{wait:?} > 1.2 × {nominal:?}");
        prop_assert!(wait >= MS(800));
        prop_assert!(wait < Duration::from_secs(72 * 60), "the 1 h step reaches 72 min, no more");
    }

    #[test]
    fn any_policys_schedule_stays_within_twenty_percent(
        policy in policies(), attempt in 0u32..20, unit in 0.0f64..1.0,
    ) {
        let nominal = policy.nominal(attempt);
        let wait = policy.scheduled(attempt, Jitter::from_unit(unit));
        prop_assert!(wait >= nominal * 4 / 5 && wait <= nominal * 6 / 5);
    }

    #[test]
    fn retry_after_never_shortens_and_never_passes_the_cap(
        policy in prop_oneof![Just(p()), policies()],
        attempt in 0u32..20,
        unit in 0.0f64..1.0,
        asked_ms in 0u64..20_000_000,
    ) {
        let jitter = Jitter::from_unit(unit);
        let asked = MS(asked_ms);
        let scheduled = policy.scheduled(attempt, jitter);
        let wait = policy.wait(attempt, Some(asked), jitter);
        prop_assert_eq!(policy.wait(attempt, None, jitter), scheduled);
        prop_assert!(wait >= scheduled);
        prop_assert!(wait >= asked.min(policy.retry_after_cap()));
        prop_assert!(wait <= scheduled.max(policy.retry_after_cap()));
        if wait > scheduled {
            // Only the receiver's wait can make it longer, and only to the cap.
            prop_assert!(wait <= policy.retry_after_cap());
        }
    }

    #[test]
    fn a_retry_is_parked_no_higher_than_its_wait(
        policy in prop_oneof![Just(p()), policies()],
        attempt in 1u32..20,
        unit in 0.0f64..1.0,
        asked_ms in prop::option::of(0u64..20_000_000),
        now_ms in 0i64..1_000_000,
    ) {
        let jitter = Jitter::from_unit(unit);
        let outcome = http_503(asked_ms.map(MS));
        match policy.decide(at(0), at(now_ms), attempt, outcome, jitter) {
            Decision::Retry { tier, wait, due_at, next_attempt, .. } => {
                let step = policy.step_tier(attempt);
                prop_assert!(tier >= step);
                prop_assert!(tier == step || policy.tier_delay(tier) <= wait);
                prop_assert_eq!(due_at, at(now_ms) + TimeDelta::from_std(wait).unwrap());
                prop_assert_eq!(next_attempt, attempt + 1);
            }
            Decision::Fail { error } => {
                prop_assert!(error.exhausted);
                prop_assert!(policy.exhausted(at(0), at(now_ms)));
            }
            other => prop_assert!(false, "{:?}", other),
        }
    }

    #[test]
    fn production_tiers_for_waits_are_the_tier_rule(ms in 0u64..10_000_000) {
        prop_assert_eq!(p().tier_for_wait(MS(ms)), Tier::for_delay(MS(ms)));
    }

    #[test]
    fn a_policys_tier_for_wait_is_monotonic(policy in policies(), a in 0u64..20_000_000, b in 0u64..20_000_000) {
        let (lo, hi) = (a.min(b), a.max(b));
        prop_assert!(policy.tier_for_wait(MS(lo)) <= policy.tier_for_wait(MS(hi)));
    }

    #[test]
    fn giving_up_flips_exactly_at_the_horizon(
        policy in prop_oneof![Just(p()), policies()],
        age_ms in 0i64..600_000_000,
        attempt in 1u32..100,
    ) {
        let horizon = policy.give_up_after().as_millis() as i64;
        // Half the cases straddle the horizon closely.
        for age in [age_ms, horizon - 1 + age_ms % 3] {
            let decision = policy.decide(at(0), at(age), attempt, http_503(None), Jitter::NONE);
            prop_assert_eq!(decision.state() == DeliveryState::Failed, age >= horizon, "age {} horizon {}", age, horizon);
        }
    }

    #[test]
    fn random_jitter_is_a_unit(seed: u64) {
        let mut rng = StdRng::seed_from_u64(seed);
        let u = Jitter::random(&mut rng).unit();
        prop_assert!((0.0..1.0).contains(&u));
    }
}
