//! Content retention (`retencion.dias_contenido`): events received longer
//! ago than that keep their seq and every envelope field, with `data` =
//! `{"motivo":"retencion","redactado":true}`. The ledger API, streams,
//! replays and webhooks all read the stored envelope, so they all carry
//! the redacted form from then on; `{prefix}.events` in Kafka keeps what
//! was published, for as long as Kafka's retention decides.
//!
//! Each instance's ledger is walked in seq order from a watermark
//! (`redaction_marks`), a small batch per transaction, stopping at the
//! first event still too young: no index beyond the ledger's primary key,
//! nothing added to the ingest path. `recibido_en` follows seq within an
//! instance (both are set in commit order); were the clock ever to step
//! back, a later event would only be redacted a little late, never early.

use chrono::TimeDelta;
use motor_domain::envelope::Envelope;
use sqlx::postgres::types::PgInterval;
use uuid::Uuid;

use crate::{Pool, Result};

/// What one batch did.
#[derive(Debug, Default)]
struct Batch {
    /// Events the watermark moved past.
    passed: usize,
    /// Of those, events whose envelope changed.
    redacted: u64,
}

/// Redacts up to `batch` events of one instance with content older than
/// `days`, in one transaction. Instances are taken in turn by
/// [`redact_older_than`].
async fn redact_instance(pool: &Pool, instance: Uuid, days: i64, batch: i64) -> Result<Batch> {
    let mut tx = pool.begin().await?;
    // The watermark row, locked: two sweepers never redact the same range.
    sqlx::query!(
        "INSERT INTO redaction_marks (instance_id) VALUES ($1) ON CONFLICT (instance_id) DO NOTHING",
        instance,
    )
    .execute(&mut *tx)
    .await?;
    let mark: i64 = sqlx::query_scalar!(
        "SELECT hasta_seq FROM redaction_marks WHERE instance_id = $1 FOR UPDATE",
        instance,
    )
    .fetch_one(&mut *tx)
    .await?;
    let rows = sqlx::query!(
        r#"SELECT seq, envelope, recibido_en < now() - $3::interval AS "old!" FROM events
           WHERE instance_id = $1 AND seq > $2 ORDER BY seq LIMIT $4"#,
        instance,
        mark,
        PgInterval::try_from(TimeDelta::days(days)).map_err(sqlx::Error::Encode)?,
        batch,
    )
    .fetch_all(&mut *tx)
    .await?;
    let mut seqs = Vec::new();
    let mut envelopes = Vec::new();
    for row in rows.iter().take_while(|r| r.old) {
        let stored = row.envelope.as_str();
        // An envelope that does not parse (never written by this code) is
        // passed over rather than holding up the instance's redaction.
        let redacted = serde_json::from_str::<Envelope>(stored)
            .map_or_else(|_| stored.to_owned(), |e| e.redacted().to_json());
        seqs.push(row.seq);
        envelopes.push(redacted);
    }
    let Some(&last) = seqs.last() else {
        return Ok(Batch::default());
    };
    let redacted = sqlx::query!(
        "UPDATE events e SET envelope = u.envelope
         FROM unnest($2::bigint[], $3::text[]) AS u (seq, envelope)
         WHERE e.instance_id = $1 AND e.seq = u.seq AND e.envelope <> u.envelope",
        instance,
        &seqs,
        &envelopes,
    )
    .execute(&mut *tx)
    .await?
    .rows_affected();
    sqlx::query!(
        "UPDATE redaction_marks SET hasta_seq = $2 WHERE instance_id = $1",
        instance,
        last
    )
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(Batch {
        passed: seqs.len(),
        redacted,
    })
}

/// One content-retention pass: for every instance with events past its
/// watermark, batches of at most `batch` events until it reaches one
/// received less than `days` ago. How many events it redacted.
pub async fn redact_older_than(pool: &Pool, days: i64, batch: i64) -> Result<u64> {
    let instances: Vec<Uuid> = sqlx::query_scalar!(
        r#"SELECT i.id AS "id!" FROM instances i LEFT JOIN redaction_marks m ON m.instance_id = i.id
           WHERE i.last_seq > coalesce(m.hasta_seq, 0)"#,
    )
    .fetch_all(pool)
    .await?;
    let mut total = 0;
    for instance in instances {
        loop {
            let done = redact_instance(pool, instance, days, batch).await?;
            total += done.redacted;
            // Less than a full batch: it reached a young event or the end.
            if (done.passed as i64) < batch {
                break;
            }
        }
    }
    Ok(total)
}
