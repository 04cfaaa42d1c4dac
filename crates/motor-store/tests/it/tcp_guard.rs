//! The TCP guard (`motor_store::tcp_guard`) on real connections to the
//! test server over loopback: every pooled connection's socket carries
//! keepalive and `TCP_USER_TIMEOUT` derived from the timeout given, the
//! sweeper's and relay's own connections (`connect_own`) the same, and a
//! zero timeout leaves the kernel's defaults.

use std::time::Duration;

use motor_store::{tcp_guard, TcpGuard};

fn server_url() -> String {
    std::env::var("MOTOR_TEST_DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432".into())
}

#[tokio::test]
async fn every_connection_carries_the_guard_it_was_made_with() {
    let url = format!("{}/postgres", server_url());
    let guard = TcpGuard {
        timeout: Duration::from_secs(12),
    };
    let pool = motor_store::connect_guarded(&url, 2, Duration::from_secs(5), guard)
        .await
        .unwrap();
    let mut pooled = pool.acquire().await.unwrap();
    let set = tcp_guard::read(&mut pooled).await.unwrap();
    assert_eq!(
        set,
        tcp_guard::SocketGuard {
            keepalive: true,
            idle: Duration::from_secs(4),
            interval: Duration::from_secs(2),
            probes: 3,
            user_timeout_ms: 12_000,
        }
    );
    let mut own = motor_store::connect_own(&pool, "motor-test-guard")
        .await
        .unwrap();
    assert_eq!(tcp_guard::read(&mut own).await.unwrap(), set);
    drop(pooled);
    pool.close().await;

    let off = motor_store::connect_guarded(&url, 1, Duration::from_secs(5), TcpGuard::OFF)
        .await
        .unwrap();
    let mut conn = off.acquire().await.unwrap();
    let untouched = tcp_guard::read(&mut conn).await.unwrap();
    assert!(!untouched.keepalive, "{untouched:?}");
    assert_eq!(untouched.user_timeout_ms, 0);
    drop(conn);
    off.close().await;
}
