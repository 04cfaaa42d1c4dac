//! Migrations keep the data: a database built and filled by the previous
//! migrations reads the same after the rest are applied.

use std::borrow::Cow;

use chrono::{DateTime, Utc};
use sqlx::{migrate::Migrator, Connection, Executor, PgConnection, PgPool};

fn server_url() -> String {
    std::env::var("MOTOR_TEST_DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432".into())
}

/// A fresh, empty database; dropped by [`Scratch::drop_it`].
struct Scratch {
    name: String,
    pool: PgPool,
}

impl Scratch {
    async fn new() -> Self {
        let name = format!(
            "motor_test_{}",
            &uuid::Uuid::new_v4().simple().to_string()[..12]
        );
        let mut admin = PgConnection::connect(&format!("{}/postgres", server_url()))
            .await
            .expect("postgres must be running (see scripts/test)");
        admin
            .execute(format!("CREATE DATABASE {name}").as_str())
            .await
            .unwrap();
        let pool = motor_store::connect(&format!("{}/{name}", server_url()), 2)
            .await
            .unwrap();
        Self { name, pool }
    }

    async fn drop_it(self) {
        self.pool.close().await;
        let mut admin = PgConnection::connect(&format!("{}/postgres", server_url()))
            .await
            .unwrap();
        admin
            .execute(format!("DROP DATABASE {} WITH (FORCE)", self.name).as_str())
            .await
            .unwrap();
    }
}

/// Motor's migrations up to and including `version`.
fn migrations_until(version: i64) -> Migrator {
    Migrator {
        migrations: Cow::Owned(
            motor_store::MIGRATOR
                .iter()
                .filter(|m| m.version <= version)
                .cloned()
                .collect(),
        ),
        ..Migrator::DEFAULT
    }
}

/// Rows written with the column names of migration 0010, one distinct
/// timestamp per renamed column, so a value that moved to the wrong
/// column shows.
const ROWS_AT_0010: &str = "
INSERT INTO apps (id, nombre, creada_en)
VALUES ('00000000-0000-0000-0000-00000000000a', 'app', '2020-01-01T00:00:01Z');
INSERT INTO instances (id, app_id, nombre, creada_en)
VALUES ('00000000-0000-0000-0000-00000000001a', '00000000-0000-0000-0000-00000000000a', 'i',
        '2020-01-01T00:00:02Z');
INSERT INTO api_keys (key_id, app_id, nombre, token_hash, scopes, creada_en, revocada_en)
VALUES ('k1', '00000000-0000-0000-0000-00000000000a', 'key', '\\x01', '{}',
        '2020-01-01T00:00:03Z', '2020-01-01T00:00:04Z');
INSERT INTO events (instance_id, seq, event_id, type, received_at, envelope)
VALUES ('00000000-0000-0000-0000-00000000001a', 1, '00000000-0000-0000-0000-00000000002a',
        't', '2020-01-01T00:00:05Z', '{}');
INSERT INTO outbox (shard, topic, key, payload, created_at)
VALUES (0, 'topic', 'key', '\\x02', '2020-01-01T00:00:06Z');
INSERT INTO idempotency_keys (app_id, instance_id, key, request_hash, status, response, created_at)
VALUES ('00000000-0000-0000-0000-00000000000a', '00000000-0000-0000-0000-00000000001a', 'ik',
        '\\x03', 201, '{}', '2020-01-01T00:00:07Z');
INSERT INTO subscriptions (id, app_id, nombre, url, estado, motivo, suspendida_en, creada_en,
                           actualizada_en)
VALUES ('00000000-0000-0000-0000-00000000003a', '00000000-0000-0000-0000-00000000000a', 's',
        'http://127.0.0.1/', 'suspendida', 'rechazo_401', '2020-01-01T00:00:08Z',
        '2020-01-01T00:00:09Z', '2020-01-01T00:00:10Z');
INSERT INTO settings (key, value, actualizada_en) VALUES ('k', '1', '2020-01-01T00:00:11Z');
INSERT INTO app_event_types (app_id, tipos, actualizada_en)
VALUES ('00000000-0000-0000-0000-00000000000a', '{t}', '2020-01-01T00:00:12Z');
INSERT INTO alerts (id, app_id, subscription_id, motivo, abierta_en, cerrada_en)
VALUES ('00000000-0000-0000-0000-00000000004a', '00000000-0000-0000-0000-00000000000a',
        '00000000-0000-0000-0000-00000000003a', 'rechazo_401', '2020-01-01T00:00:13Z',
        '2020-01-01T00:00:14Z');
INSERT INTO deliveries (id, subscription_id, app_id, instance_id, event_id, seq, estado,
                        proximo_intento, lease_until, parked_at, creada_en, actualizada_en)
VALUES ('00000000-0000-0000-0000-00000000005a', '00000000-0000-0000-0000-00000000003a',
        '00000000-0000-0000-0000-00000000000a', '00000000-0000-0000-0000-00000000001a',
        '00000000-0000-0000-0000-00000000002a', 1, 'pendiente', '2020-01-01T00:00:15Z',
        '2020-01-01T00:00:16Z', '2020-01-01T00:00:17Z', '2020-01-01T00:00:18Z',
        '2020-01-01T00:00:19Z');
INSERT INTO deliveries (id, subscription_id, app_id, instance_id, event_id, seq, lane, estado,
                        proximo_intento, entregada_en)
VALUES ('00000000-0000-0000-0000-00000000005b', '00000000-0000-0000-0000-00000000003a',
        '00000000-0000-0000-0000-00000000000a', '00000000-0000-0000-0000-00000000001a',
        '00000000-0000-0000-0000-00000000002a', 1, 'replay', 'entregada', NULL,
        '2020-01-01T00:00:20Z');
INSERT INTO subscription_rate (subscription_id, tokens, actualizado)
VALUES ('00000000-0000-0000-0000-00000000003a', 1.5, '2020-01-01T00:00:21Z');
";

/// Each renamed column, by its new name, with the row it is read from and
/// the value written under its old name.
const RENAMED: &[(&str, &str, u32)] = &[
    ("apps", "creado_en", 1),
    ("instances", "creado_en", 2),
    ("api_keys", "creado_en", 3),
    ("api_keys", "revocado_en", 4),
    ("events", "recibido_en", 5),
    ("outbox", "creado_en", 6),
    ("idempotency_keys", "creado_en", 7),
    ("subscriptions", "suspendido_en", 8),
    ("subscriptions", "creado_en", 9),
    ("subscriptions", "actualizado_en", 10),
    ("settings", "actualizado_en", 11),
    ("app_event_types", "actualizado_en", 12),
    ("alerts", "abierto_en", 13),
    ("alerts", "cerrado_en", 14),
    ("deliveries WHERE lane = 'live'", "proximo_intento", 15),
    ("deliveries WHERE lane = 'live'", "reservado_hasta", 16),
    ("deliveries WHERE lane = 'live'", "aparcado_en", 17),
    ("deliveries WHERE lane = 'live'", "creado_en", 18),
    ("deliveries WHERE lane = 'live'", "actualizado_en", 19),
    ("deliveries WHERE lane = 'replay'", "entregado_en", 20),
    ("subscription_rate", "actualizado_en", 21),
];

#[tokio::test]
async fn the_one_spelling_migration_keeps_every_row() {
    let db = Scratch::new().await;
    migrations_until(10).run(&db.pool).await.unwrap();
    sqlx::raw_sql(ROWS_AT_0010).execute(&db.pool).await.unwrap();

    motor_store::MIGRATOR.run(&db.pool).await.unwrap();

    let base: DateTime<Utc> = "2020-01-01T00:00:00Z".parse().unwrap();
    for &(from, column, second) in RENAMED {
        // Test-only: the table and column vary by case.
        let read: DateTime<Utc> = sqlx::query_scalar(&format!("SELECT {column} FROM {from}"))
            .fetch_one(&db.pool)
            .await
            .unwrap_or_else(|e| panic!("{from}.{column}: {e}"));
        assert_eq!(
            read,
            base + chrono::Duration::seconds(second.into()),
            "{from}.{column}"
        );
    }
    let tokens: f64 = sqlx::query_scalar("SELECT tokens FROM subscription_rate")
        .fetch_one(&db.pool)
        .await
        .unwrap();
    assert_eq!(tokens, 1.5);
    // The unique index over open alerts survived under its columns' new
    // name: a second open alert of the same subscription and motivo is
    // refused, a closed one is not.
    let first_open = sqlx::query(
        "INSERT INTO alerts (id, app_id, subscription_id, motivo)
         VALUES (gen_random_uuid(), '00000000-0000-0000-0000-00000000000a',
                 '00000000-0000-0000-0000-00000000003a', 'rechazo_401')",
    );
    first_open.execute(&db.pool).await.unwrap();
    let err = sqlx::query(
        "INSERT INTO alerts (id, app_id, subscription_id, motivo)
         VALUES (gen_random_uuid(), '00000000-0000-0000-0000-00000000000a',
                 '00000000-0000-0000-0000-00000000003a', 'rechazo_401')",
    )
    .execute(&db.pool)
    .await
    .unwrap_err();
    assert_eq!(
        err.as_database_error().and_then(|e| e.constraint()),
        Some("alerts_one_open")
    );
    db.drop_it().await;
}

/// Deliveries leave room on their pages for their claims' updates
/// (migration 0029): of 2,000 open deliveries claimed in one transaction
/// (the claim's columns, none indexed), more than a tenth are updated in
/// place (HOT): 371 at fillfactor 85. Pages filled to the brim
/// (fillfactor 100) kept none.
#[tokio::test]
async fn deliveries_leave_room_on_their_pages_for_a_claims_update() {
    let db = Scratch::new().await;
    motor_store::MIGRATOR.run(&db.pool).await.unwrap();
    let mut tx = db.pool.begin().await.unwrap();
    tx.execute(
        "INSERT INTO deliveries (id, subscription_id, app_id, instance_id, event_id, seq, aparcado_en)
         SELECT gen_random_uuid(), '00000000-0000-0000-0000-00000000003a',
                '00000000-0000-0000-0000-00000000000a', '00000000-0000-0000-0000-00000000001a',
                gen_random_uuid(), n, now()
         FROM generate_series(1, 2000) n",
    )
    .await
    .unwrap();
    tx.execute(
        "UPDATE deliveries SET reservado_hasta = now() + interval '30 seconds',
                               aparcado_en = NULL, actualizado_en = now()",
    )
    .await
    .unwrap();
    let (updated, hot): (i64, i64) = sqlx::query_as(
        "SELECT pg_stat_get_xact_tuples_updated('deliveries'::regclass),
                pg_stat_get_xact_tuples_hot_updated('deliveries'::regclass)",
    )
    .fetch_one(&mut *tx)
    .await
    .unwrap();
    tx.rollback().await.unwrap();
    assert_eq!(updated, 2000);
    assert!(hot > 200, "{hot} of 2,000 claims updated in place");
    db.drop_it().await;
}
