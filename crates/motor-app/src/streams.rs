//! Where a stream of an instance's ledger opens (`GET
//! /v1/instances/{id}/events/stream`): the start a client asked for,
//! resolved against the ledger and the resumption window now. The HTTP
//! API's stream hub then follows the ledger from that position.

use motor_domain::{
    stream::{cursor_field, Start},
    FieldError, InstanceId,
};
use motor_store::{ledger::stream as ledger, settings, Pool};

use crate::{AppError, Result};

/// A stream's opening.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Opening {
    /// Send what follows `position`; the ledger ended at `last` when read.
    From { position: i64, last: i64 },
    /// The cursor is older than the resumption window: resume from
    /// `first_resumable` (the API's 410 `cursor_vencido`).
    Expired { cursor: i64, first_resumable: i64 },
}

/// Resolves `start` for `instance` (404 if it does not exist). A cursor
/// past the ledger's last event is a field error naming where it came
/// from: `desde`, or `Last-Event-ID` when `last_event_id` was sent.
pub async fn open(
    pool: &Pool,
    instance: InstanceId,
    start: Start,
    last_event_id: Option<&str>,
) -> Result<Opening> {
    let last = ledger::last_seq(pool, instance)
        .await?
        .ok_or(AppError::NotFound("instance"))?;
    let position = match start {
        Start::Now => last,
        Start::FirstResumable => {
            let cutoff = cutoff(pool).await?;
            ledger::first_resumable(pool, instance, last, cutoff).await?
        }
        Start::After(cursor) if cursor > last => {
            return Err(FieldError::invalid(
                cursor_field(last_event_id),
                format!("cursor {cursor} is past this instance's last event ({last})"),
            )
            .into())
        }
        Start::After(cursor) => {
            let cutoff = cutoff(pool).await?;
            if !ledger::is_resumable(pool, instance, cursor, last, cutoff).await? {
                let first_resumable = ledger::first_resumable(pool, instance, last, cutoff).await?;
                return Ok(Opening::Expired {
                    cursor,
                    first_resumable,
                });
            }
            cursor
        }
    };
    Ok(Opening::From { position, last })
}

/// Events received before this are past the resumption window.
async fn cutoff(pool: &Pool) -> Result<motor_domain::time::Timestamp> {
    let settings = settings::load(pool).await?;
    Ok(chrono::Utc::now() - settings.stream_window())
}
