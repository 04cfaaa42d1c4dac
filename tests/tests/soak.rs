//! The soak, ignored by default: `scripts/soak [--minutes N]` runs it
//! (`MOTOR_SOAK_MINUTES`, default 10). It fails when a judged series grows
//! without bound (`scenarios::soak::leaks`) or the checker finds a
//! violation.

use motor_system_tests::scenarios::soak;

#[test]
#[ignore = "the soak: scripts/soak"]
fn soak() {
    let minutes = std::env::var("MOTOR_SOAK_MINUTES")
        .ok()
        .and_then(|m| m.parse().ok())
        .unwrap_or(10);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    let (report, leaks) = runtime
        .block_on(soak::soak(minutes))
        .unwrap_or_else(|e| panic!("soak: {e:#}"));
    for leak in &leaks {
        println!("LEAK {leak}");
    }
    assert!(report.ok(), "{report}");
    assert!(leaks.is_empty(), "grew without bound: {leaks:?}");
}
