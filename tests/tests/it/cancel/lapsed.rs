//! What the sweeper's look for lapsed API keys reads, with many tenants
//! (issue 38: a pass must not grow with them): thousands of `visito`
//! subscriptions bound to live keys, beside keys that lapsed lately and
//! long ago. A pass over the keys that lapsed lately reads no subscription
//! when none did and suspends exactly those of the keys that did; the pass
//! over every lapsed key (once a minute) also finds a subscription bound
//! after its key lapsed, long ago, and reads only the live subscriptions
//! of lapsed keys. Against the database, through
//! `motor_store::subscriptions::suspend_for_lapsed_keys`, in a transaction
//! whose statistics (`pg_stat_xact_user_tables`) count what it read.

use std::time::Duration;

use motor_store::subscriptions::{suspend_for_lapsed_keys, Lapsed};
use sqlx::{Connection, Executor, PgConnection};

use crate::util::{connect, scans, TestDb};

/// Tenants: an app, a live key and five `visito` subscriptions bound to
/// it each (the bench's many-tenants shape, under a cancelling contract).
const TENANTS: i64 = 2_000;

/// Revoked keys whose subscriptions were suspended then: history that the
/// look at every lapsed key reads among the keys, but whose suspended
/// subscriptions it neither reads nor suspends again.
const REVOKED_BEFORE: i64 = 100;

/// What the window passes are given: the widest window the sweeper uses,
/// just before its next look at every key (a minute, with its margin of
/// 5 s).
const WITHIN: Duration = Duration::from_secs(65);

/// The tenants and the revoked history. The test adds the keys that
/// lapsed ([`lapsed_key`]), each with a live `visito` subscription bound to
/// it: `old` (past its `vence_en` 2 hours ago, the subscription bound
/// after: a change that authenticated just before the key lapsed), then
/// `recent` (past its `vence_en` 2 s ago) and `revoked` (revoked 1 s ago,
/// with a live `motor` subscription too, which no lapse suspends).
async fn build(conn: &mut PgConnection) {
    conn.execute(
        format!(
            "INSERT INTO apps (id, nombre)
                 SELECT md5('app' || a)::uuid, 'tenant ' || a FROM generate_series(0, {TENANTS}) a;
             INSERT INTO api_keys (key_id, app_id, nombre, token_hash, scopes)
                 SELECT 'key' || a, md5('app' || a)::uuid, 'k', sha256(('key' || a)::bytea),
                        '{{subscriptions:manage}}'
                 FROM generate_series(1, {TENANTS}) a;
             INSERT INTO subscriptions (id, app_id, nombre, url, contrato, clave_api)
                 SELECT md5('sub' || n)::uuid, md5('app' || (1 + n / 5))::uuid, 's' || n,
                        'http://127.0.0.1/', 'visito', 'key' || (1 + n / 5)
                 FROM generate_series(0, {TENANTS} * 5 - 1) n;
             INSERT INTO api_keys (key_id, app_id, nombre, token_hash, scopes, revocado_en)
                 SELECT 'gone' || r, md5('app0')::uuid, 'r', sha256(('gone' || r)::bytea),
                        '{{subscriptions:manage}}', now() - interval '1 day'
                 FROM generate_series(1, {REVOKED_BEFORE}) r;
             INSERT INTO subscriptions (id, app_id, nombre, url, contrato, clave_api,
                                        estado, motivo, suspendido_en)
                 SELECT md5('gone' || r)::uuid, md5('app0')::uuid, 'g' || r, 'http://127.0.0.1/',
                        'visito', 'gone' || r, 'suspendida', 'clave_revocada', now() - interval '1 day'
                 FROM generate_series(1, {REVOKED_BEFORE}) r;"
        )
        .as_str(),
    )
    .await
    .unwrap();
}

/// Adds key `name`, lapsed `ago` (an interval) by its `column`
/// (`vence_en` or `revocado_en`), with a live subscription of each of
/// `contracts` bound to it.
async fn lapsed_key(
    conn: &mut PgConnection,
    name: &str,
    column: &str,
    ago: &str,
    contracts: &[&str],
) {
    conn.execute(
        format!(
            "INSERT INTO api_keys (key_id, app_id, nombre, token_hash, scopes, {column})
             VALUES ('{name}', md5('app0')::uuid, '{name}', sha256('{name}'::bytea),
                     '{{subscriptions:manage}}', now() - interval '{ago}')"
        )
        .as_str(),
    )
    .await
    .unwrap();
    for contract in contracts {
        conn.execute(
            format!(
                "INSERT INTO subscriptions (id, app_id, nombre, url, contrato, clave_api)
                 VALUES (md5('{name}{contract}')::uuid, md5('app0')::uuid, '{name} {contract}',
                         'http://127.0.0.1/', '{contract}', '{name}')"
            )
            .as_str(),
        )
        .await
        .unwrap();
    }
}

/// Rows of `subscriptions` this transaction read: sequentially, or
/// fetched through an index.
async fn rows_read(conn: &mut PgConnection) -> i64 {
    sqlx::query_scalar(
        "SELECT coalesce(sum(seq_tup_read + coalesce(idx_tup_fetch, 0)), 0)::bigint
         FROM pg_stat_xact_user_tables WHERE relname = 'subscriptions'",
    )
    .fetch_one(conn)
    .await
    .unwrap()
}

/// Each subscription bound to key `name` as (contract, estado, motivo).
async fn bound(conn: &mut PgConnection, name: &str) -> Vec<(String, String, Option<String>)> {
    sqlx::query_as(
        "SELECT contrato, estado, motivo FROM subscriptions WHERE clave_api = $1 ORDER BY contrato",
    )
    .bind(name)
    .fetch_all(conn)
    .await
    .unwrap()
}

fn live(contract: &str) -> (String, String, Option<String>) {
    (contract.to_owned(), "activa".to_owned(), None)
}

fn suspended(contract: &str, motivo: &str) -> (String, String, Option<String>) {
    (
        contract.to_owned(),
        "suspendida".to_owned(),
        Some(motivo.to_owned()),
    )
}

/// What one look at `lapsed` did, in a transaction of its own: how many
/// subscriptions it suspended, and the scans of `subscriptions` it made
/// and rows of it it read. Committed, or rolled back when `keep` is false.
async fn look(conn: &mut PgConnection, lapsed: Lapsed<'_>, keep: bool) -> (usize, i64, i64) {
    let mut tx = conn.begin().await.unwrap();
    let (scanned, read) = (
        scans(&mut tx, "subscriptions").await,
        rows_read(&mut tx).await,
    );
    let suspended = suspend_for_lapsed_keys(&mut tx, lapsed).await.unwrap();
    let looked = (
        suspended,
        scans(&mut tx, "subscriptions").await - scanned,
        rows_read(&mut tx).await - read,
    );
    if keep {
        tx.commit().await.unwrap();
    } else {
        tx.rollback().await.unwrap();
    }
    looked
}

#[tokio::test]
async fn a_pass_reads_what_lapsed_not_what_is_bound() {
    let db = TestDb::new().await;
    let mut conn = connect(&db.url).await;
    build(&mut conn).await;
    lapsed_key(&mut conn, "old", "vence_en", "2 hours", &["visito"]).await;

    // Nothing lapsed lately: the window pass reads no subscription.
    let (n, scanned, read) = look(&mut conn, Lapsed::Within(WITHIN), false).await;
    assert_eq!(n, 0);
    assert_eq!(
        (scanned, read),
        (0, 0),
        "a pass with no key lapsed lately read subscriptions"
    );

    lapsed_key(&mut conn, "recent", "vence_en", "2 seconds", &["visito"]).await;
    lapsed_key(
        &mut conn,
        "revoked",
        "revocado_en",
        "1 second",
        &["motor", "visito"],
    )
    .await;

    // The window pass suspends the subscriptions of the keys that lapsed
    // within it, reading those and no other.
    let (n, _, read) = look(&mut conn, Lapsed::Within(WITHIN), true).await;
    assert_eq!(n, 2);
    assert!(
        read <= 10,
        "the window pass read {read} subscriptions to suspend 2"
    );
    assert_eq!(
        bound(&mut conn, "recent").await,
        [suspended("visito", "clave_vencida")]
    );
    assert_eq!(
        bound(&mut conn, "revoked").await,
        [live("motor"), suspended("visito", "clave_revocada")]
    );
    assert_eq!(bound(&mut conn, "old").await, [live("visito")]);

    // The pass over every lapsed key finds the one bound after its key
    // lapsed long ago, reading only live subscriptions of lapsed keys.
    let (n, _, read) = look(&mut conn, Lapsed::Every, true).await;
    assert_eq!(n, 1);
    assert!(
        read <= 10,
        "the pass over every lapsed key read {read} subscriptions to suspend 1"
    );
    assert_eq!(
        bound(&mut conn, "old").await,
        [suspended("visito", "clave_vencida")]
    );
    assert_eq!(
        bound(&mut conn, "revoked").await,
        [live("motor"), suspended("visito", "clave_revocada")]
    );
}
