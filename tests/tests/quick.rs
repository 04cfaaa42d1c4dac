//! The quick subset of the fault matrix, run on every push (`scripts/test`
//! runs it as ordinary tests): each scenario is a real run — separate
//! `motor` processes with split roles, Postgres, the shared broker, our
//! receivers — judged by the checker. One at a time (a lock), since the
//! machine is shared.

use std::sync::Mutex;

use motor_system_tests::scenarios::{self, Size};

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn scenario(name: &str) {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    scenarios::run_and_check(name, Size::Quick);
}

#[test]
fn kill9_dispatch() {
    scenario("kill9-dispatch");
}

#[test]
fn kill9_relay() {
    scenario("kill9-relay");
}

#[test]
fn receivers_mix() {
    scenario("receivers-mix");
}

#[test]
fn suspended_reactivated() {
    scenario("suspended-reactivated");
}

#[test]
fn brokers_kill9_dispatch() {
    scenario("brokers-kill9-dispatch");
}
