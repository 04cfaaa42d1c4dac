//! The soak, ignored by default: `scripts/soak [--minutes N]` runs it
//! (`MOTOR_SOAK_MINUTES`, default 10). It fails when a judged series grows
//! without bound (`scenarios::soak::leaks`), the checker finds a
//! violation, or a stream follower missed an event of its instance.

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
    let soak::Soak {
        report,
        leaks,
        streams,
    } = runtime
        .block_on(soak::soak(minutes))
        .unwrap_or_else(|e| panic!("soak: {e:#}"));
    for leak in &leaks {
        println!("LEAK {leak}");
    }
    for missed in &streams {
        println!("STREAM {missed}");
    }
    assert!(report.ok(), "{report}");
    assert!(leaks.is_empty(), "grew without bound: {leaks:?}");
    assert!(streams.is_empty(), "a stream follower missed: {streams:?}");
}
