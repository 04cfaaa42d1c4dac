//! The ledger's two use cases: append a producer's event or batch (with
//! or without an `Idempotency-Key`) and read a page of an instance's
//! events. Both answer the stored envelope bytes, unchanged.

pub mod intake;

use std::sync::Arc;

use motor_domain::{
    event::{
        cap::{METADATA, METADATA_OMITTED},
        EventBatch,
    },
    ledger::LedgerQuery,
    AppId, InstanceId,
};
use motor_store::{
    deliveries::AfterCommit,
    idempotency::{self, StoredAnswer},
    ledger::{self, Appended},
    Pool,
};
use serde_json::Value;
use sha2::{Digest, Sha256};

pub use self::intake::Intake;
use crate::{AppError, Result};

/// The status a stored answer keeps: `201` when anything new was stored,
/// `200` when every event was already there (known `source_id`s). The
/// `Idempotency-Key` table stores it with the body, so a repeat answers
/// exactly the first answer.
pub const STORED_NEW: u16 = 201;
pub const NOTHING_NEW: u16 = 200;

/// The answer to an append.
#[derive(Debug)]
pub struct AppendAnswer {
    /// [`STORED_NEW`] or [`NOTHING_NEW`].
    pub status: u16,
    /// The stored envelopes: object in, object out; array in, array out.
    pub body: String,
    /// What this call appended; `None` when it answered a repeated
    /// `Idempotency-Key` with the first answer (nothing was written).
    pub appended: Option<Appended>,
}

/// Where appends go: the process's group commit, the pool for
/// `Idempotency-Key` requests, and the dispatcher handed first attempts.
#[derive(Clone)]
pub struct Ledger {
    pub pool: Pool,
    pub intake: Intake,
    pub after_commit: Option<Arc<dyn AfterCommit>>,
}

impl Ledger {
    /// The ledger of a serving process: starts its intake's worker, with
    /// `pace` between two batches' starts ([`Intake::start`]).
    pub fn start(
        pool: Pool,
        after_commit: Option<Arc<dyn AfterCommit>>,
        pace: std::time::Duration,
    ) -> Self {
        Self {
            intake: Intake::start(pool.clone(), after_commit.clone(), pace),
            pool,
            after_commit,
        }
    }

    /// Appends one event or a batch (`body`, the request's JSON) to
    /// `instance`'s ledger. Without a key the request joins the next group
    /// commit. With one, its stored answer shares the append's
    /// transaction: the instance is locked, a first answer for the key is
    /// answered again (the same body; another body is a conflict), else the
    /// events are appended by the same function as a batch's and the
    /// answer stored with them.
    pub async fn append(
        &self,
        app: AppId,
        instance: InstanceId,
        idempotency_key: Option<&str>,
        body: &Value,
    ) -> Result<AppendAnswer> {
        let batch = EventBatch::parse(body)?;
        check_metadata(&self.pool, app, &batch, body).await?;
        let Some(key) = idempotency_key else {
            let is_batch = batch.is_batch();
            let appended = self.intake.append(instance, batch.into_events()).await?;
            let (status, body) = answer(is_batch, &appended);
            return Ok(AppendAnswer {
                status,
                body,
                appended: Some(appended),
            });
        };
        let request_hash = Sha256::digest(body.to_string().as_bytes()).to_vec();

        let mut tx = self.pool.begin().await?;
        let locked = ledger::lock_instance(&mut tx, instance).await?;
        if let Some(first) = idempotency::find(&mut tx, app, instance, key).await? {
            if first.request_hash != request_hash {
                return Err(AppError::conflict(
                    "this Idempotency-Key was used with a different body",
                ));
            }
            return Ok(AppendAnswer {
                status: first.status,
                body: first.response,
                appended: None,
            });
        }
        let taking = self.after_commit.as_ref().and_then(|a| a.taking());
        let mut appended =
            ledger::append_locked_handing(&mut tx, locked, batch.events(), taking.as_ref()).await?;
        let (status, response) = answer(batch.is_batch(), &appended);
        let stored = StoredAnswer {
            request_hash,
            status,
            response: response.clone(),
        };
        idempotency::save(&mut tx, app, instance, key, &stored).await?;
        tx.commit().await?;
        if let Some(after_commit) = &self.after_commit {
            after_commit.committed(std::mem::take(&mut appended.handed));
        }
        Ok(AppendAnswer {
            status,
            body: response,
            appended: Some(appended),
        })
    }
}

/// The door's metadata cap of the app's contract (Asixto's 4 KB,
/// [`motor_domain::contract::ContractSpec::check_request_metadata`]),
/// checked on the request as it arrived. Only a request with a `metadata`
/// in some event's `data` costs the app's row (one primary-key read).
async fn check_metadata(pool: &Pool, app: AppId, batch: &EventBatch, body: &Value) -> Result<()> {
    let carries_metadata = batch
        .events()
        .iter()
        .any(|e| e.data.get(METADATA).is_some() || e.data.get(METADATA_OMITTED).is_some());
    if !carries_metadata {
        return Ok(());
    }
    let contract = motor_store::operator::get_app(pool, app).await?.contract;
    Ok(contract.spec().check_request_metadata(body)?)
}

/// The answer to an append: the stored envelopes (object in, object out;
/// array in, array out), [`STORED_NEW`] when anything new was stored.
fn answer(is_batch: bool, appended: &Appended) -> (u16, String) {
    let response = if is_batch {
        format!("[{}]", appended.envelopes.join(","))
    } else {
        appended.envelopes[0].clone()
    };
    let status = if appended.stored > 0 {
        STORED_NEW
    } else {
        NOTHING_NEW
    };
    (status, response)
}

/// A page of the ledger, as `GET /v1/instances/{id}/events` answers it.
#[derive(Debug)]
pub struct LedgerPage {
    /// The stored envelopes, in `seq` order.
    pub events: Vec<String>,
    /// Pass it as `after_seq` for the next page.
    pub next_after_seq: i64,
    pub has_more: bool,
}

/// Reads a page of `instance`'s ledger from the raw query parameters
/// (`after_seq`, `limit`, `types`; absent = default).
pub async fn read_page(
    pool: &Pool,
    instance: InstanceId,
    after_seq: Option<&str>,
    limit: Option<&str>,
    types: Option<&str>,
) -> Result<LedgerPage> {
    let query = LedgerQuery::parse(after_seq, limit, types)?;
    let (page, has_more) = ledger::read_page(pool, instance, &query).await?;
    let next_after_seq = page.last().map_or(query.after_seq, |(seq, _)| *seq);
    Ok(LedgerPage {
        events: page.into_iter().map(|(_, envelope)| envelope).collect(),
        next_after_seq,
        has_more,
    })
}
