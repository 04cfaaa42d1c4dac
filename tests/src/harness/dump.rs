//! The dump: Motor's subscriptions, events, replays, deliveries,
//! attempts, commands and the events that cite a command, read (only
//! read) from the run's database once it is over.

use sqlx::PgPool;

use crate::history::Row;

/// A timestamptz column as unix microseconds.
fn us(column: &str) -> String {
    format!("(extract(epoch FROM {column}) * 1000000)::bigint")
}

pub async fn dump(pool: &PgPool) -> anyhow::Result<Vec<Row>> {
    let mut rows = Vec::new();
    type SubscriptionRow = (String, String, bool, bool, String, Vec<String>, i64);
    let subs: Vec<SubscriptionRow> = sqlx::query_as(&format!(
        "SELECT id::text, url, ordenado, orden_por_clave, estado, instancias::text[], {} \
         FROM subscriptions ORDER BY creado_en",
        us("creado_en")
    ))
    .fetch_all(pool)
    .await?;
    for (id, url, ordenado, orden_por_clave, estado, instancias, creada_us) in subs {
        rows.push(Row::Subscription {
            id,
            url,
            ordenado,
            orden_por_clave,
            estado,
            instancias,
            creada_us,
        });
    }
    let events: Vec<(String, i64, String, i64, Option<String>)> = sqlx::query_as(&format!(
        "SELECT instance_id::text, seq, event_id::text, {}, orden_clave FROM events \
         ORDER BY instance_id, seq",
        us("recibido_en")
    ))
    .fetch_all(pool)
    .await?;
    for (instance_id, seq, event_id, received_us, orden_clave) in events {
        rows.push(Row::Event {
            instance_id,
            seq,
            event_id,
            received_us,
            orden_clave,
        });
    }
    let replays: Vec<(String, String)> =
        sqlx::query_as("SELECT id::text, subscription_id::text FROM replays ORDER BY creado_en")
            .fetch_all(pool)
            .await?;
    for (id, subscription_id) in replays {
        rows.push(Row::Replay {
            id,
            subscription_id,
        });
    }
    type DeliveryRow = (
        String,
        String,
        String,
        String,
        i64,
        String,
        String,
        i32,
        Option<i32>,
        Option<String>,
        i64,
        i64,
        Option<i64>,
        Option<i64>,
    );
    let deliveries: Vec<DeliveryRow> = sqlx::query_as(&format!(
        "SELECT id::text, subscription_id::text, instance_id::text, event_id::text, seq, lane, \
         estado, intentos, ultimo_status, ultimo_error, {}, {}, {}, {} FROM deliveries \
         ORDER BY subscription_id, instance_id, lane, seq",
        us("creado_en"),
        us("actualizado_en"),
        us("entregado_en"),
        us("cancelada_en")
    ))
    .fetch_all(pool)
    .await?;
    for d in deliveries {
        rows.push(Row::Delivery {
            id: d.0,
            subscription_id: d.1,
            instance_id: d.2,
            event_id: d.3,
            seq: d.4,
            lane: d.5,
            estado: d.6,
            intentos: d.7,
            ultimo_status: d.8,
            ultimo_error: d.9,
            creada_us: d.10,
            actualizada_us: d.11,
            entregada_us: d.12,
            cancelada_us: d.13,
        });
    }
    type AttemptRow = (String, i32, i64, i32, Option<i32>, Option<String>);
    let attempts: Vec<AttemptRow> = sqlx::query_as(&format!(
        "SELECT delivery_id::text, numero, {}, duracion_ms, status, error FROM delivery_attempts \
         ORDER BY delivery_id, numero",
        us("iniciado_en")
    ))
    .fetch_all(pool)
    .await?;
    for (delivery_id, numero, iniciado_us, duracion_ms, status, error) in attempts {
        rows.push(Row::Attempt {
            delivery_id,
            numero,
            iniciado_us,
            duracion_ms: duracion_ms as i64,
            status,
            error,
        });
    }
    type CommandRow = (
        String,
        String,
        String,
        String,
        Option<String>,
        Option<String>,
        Option<String>,
        Option<String>,
        Option<String>,
        Option<String>,
        i32,
        i64,
        i64,
    );
    let commands: Vec<CommandRow> = sqlx::query_as(&format!(
        "SELECT id::text, instance_id::text, tipo, status, error_code, stage, server_code,          provider_message_id, idempotency_key, correlation_id, reclamos, {}, {} FROM commands          ORDER BY instance_id, creado_en, id",
        us("creado_en"),
        us("actualizado_en")
    ))
    .fetch_all(pool)
    .await?;
    for c in commands {
        rows.push(Row::Command {
            id: c.0,
            instance_id: c.1,
            tipo: c.2,
            status: c.3,
            error_code: c.4,
            stage: c.5,
            server_code: c.6,
            provider_message_id: c.7,
            idempotency_key: c.8,
            correlation_id: c.9,
            reclamos: c.10,
            creada_us: c.11,
            actualizada_us: c.12,
        });
    }
    let cited: Vec<(String, i64, String, String, i64)> = sqlx::query_as(&format!(
        "SELECT instance_id::text, seq, type, envelope::jsonb->>'command_id', {} FROM events \
         WHERE envelope::jsonb->>'command_id' IS NOT NULL ORDER BY instance_id, seq",
        us("recibido_en")
    ))
    .fetch_all(pool)
    .await?;
    for (instance_id, seq, event_type, command_id, received_us) in cited {
        rows.push(Row::CommandEvent {
            instance_id,
            seq,
            event_type,
            command_id,
            received_us,
        });
    }
    Ok(rows)
}
