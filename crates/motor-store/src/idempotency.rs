//! Idempotency-Key of producer requests: the first answer is kept and
//! returned again for the same key and body; the same key with another body
//! is a conflict. Checked under the instance lock, so concurrent requests
//! with one key are serialised.

use motor_domain::{AppId, InstanceId};
use sqlx::PgConnection;
use uuid::Uuid;

use crate::Result;

/// A stored answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredAnswer {
    pub request_hash: Vec<u8>,
    pub status: u16,
    pub response: String,
}

pub async fn find(
    conn: &mut PgConnection,
    app: AppId,
    instance: InstanceId,
    key: &str,
) -> Result<Option<StoredAnswer>> {
    let row = sqlx::query!(
        "SELECT request_hash, status, response FROM idempotency_keys
         WHERE app_id = $1 AND instance_id = $2 AND key = $3",
        Uuid::from(app),
        Uuid::from(instance),
        key,
    )
    .fetch_optional(conn)
    .await?;
    Ok(row.map(|row| StoredAnswer {
        request_hash: row.request_hash,
        status: row.status as u16,
        response: row.response,
    }))
}

pub async fn save(
    conn: &mut PgConnection,
    app: AppId,
    instance: InstanceId,
    key: &str,
    answer: &StoredAnswer,
) -> Result<()> {
    sqlx::query!(
        "INSERT INTO idempotency_keys (app_id, instance_id, key, request_hash, status, response)
         VALUES ($1, $2, $3, $4, $5, $6)",
        Uuid::from(app),
        Uuid::from(instance),
        key,
        &answer.request_hash,
        answer.status as i16,
        &answer.response,
    )
    .execute(conn)
    .await?;
    Ok(())
}
