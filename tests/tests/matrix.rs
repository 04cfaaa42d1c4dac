//! The whole fault matrix at full size, one scenario per test, ignored by
//! default: `scripts/faults` runs it (`--ignored --test-threads 1`) and
//! then `motor-check` over every history for the summary table.

use motor_system_tests::scenarios::{self, Size};

macro_rules! matrix {
    ($($test:ident => $name:literal,)*) => {
        $(
            #[test]
            #[ignore = "the full fault matrix: scripts/faults"]
            fn $test() {
                scenarios::run_and_check($name, Size::Full);
            }
        )*

        #[test]
        fn every_scenario_has_a_test() {
            let mut listed = vec![$($name),*];
            listed.sort();
            let mut all = scenarios::ALL.to_vec();
            all.sort();
            assert_eq!(listed, all);
        }
    };
}

matrix! {
    kill9_api => "kill9-api",
    kill9_relay => "kill9-relay",
    kill9_dispatch => "kill9-dispatch",
    kill9_retry => "kill9-retry",
    kill9_sweeper => "kill9-sweeper",
    kill9_all => "kill9-all",
    broker_restart => "broker-restart",
    postgres_crash => "postgres-crash",
    postgres_failover => "postgres-failover",
    postgres_failover_async => "postgres-failover-async",
    rebalance_storm => "rebalance-storm",
    netcut_postgres => "netcut-postgres",
    netcut_broker => "netcut-broker",
    netcut_broker_blackhole => "netcut-broker-blackhole",
    brokers_kill9_dispatch => "brokers-kill9-dispatch",
    contracts_kill9_dispatch => "contracts-kill9-dispatch",
    hotlane_kill9_dispatch => "hotlane-kill9-dispatch",
    receivers_mix => "receivers-mix",
    receivers_trickle => "receivers-trickle",
    receivers_clock_skew => "receivers-clock-skew",
    poison_head => "poison-head",
    replay_during_live => "replay-during-live",
    secret_rotation => "secret-rotation",
    suspended_reactivated => "suspended-reactivated",
    unordered_in_flight => "unordered-in-flight",
    commands => "commands",
}
