//! Deliveries: an app's listing and one delivery with every attempt (for
//! a key: a key restricted to instances sees only theirs), the operator's
//! search across apps and detail, and the manual `retry` of a failed one.

pub mod query;
pub mod retry;

use std::collections::HashMap;

use motor_domain::{delivery::DeliveryId, principal::Principal};
use motor_store::{
    deliveries::read::{self, AttemptRow, Delivery, Filter},
    Pool,
};

pub use self::query::{encode_cursor, ListQuery, DEFAULT_PER_PAGE, MAX_PER_PAGE};
use crate::{access::restricted, AppError, Result};

/// One page of an app's deliveries, newest first.
#[derive(Debug)]
pub struct DeliveryPage {
    pub deliveries: Vec<Delivery>,
    pub page: i64,
    pub per_page: i64,
    pub has_more: bool,
}

/// One page of the operator's search; `next_cursor` asks for the next.
#[derive(Debug)]
pub struct SearchPage {
    pub deliveries: Vec<Delivery>,
    pub next_cursor: Option<String>,
}

/// A delivery and every attempt made for it, in order.
#[derive(Debug)]
pub struct DeliveryDetail {
    pub delivery: Delivery,
    pub attempts: Vec<AttemptRow>,
}

/// The caller's deliveries filtered by the raw parameters (`estado`,
/// `suscripcion_id`, `instancia_id`, `pagina`, `por_pagina`); a filter
/// naming an instance outside a key's restriction is refused.
pub async fn list(
    pool: &Pool,
    caller: &Principal,
    params: &HashMap<String, String>,
) -> Result<DeliveryPage> {
    let query = ListQuery::parse(params)?;
    if let Some(instance) = query.instance_id {
        if !caller.may_access(instance) {
            return Err(restricted());
        }
    }
    let filter = Filter {
        app: caller.app_id,
        states: query.states,
        subscription: query.subscription_id,
        instance: query.instance_id,
        restricted_to: caller.instances.clone(),
        offset: (query.page - 1) * query.per_page,
        limit: query.per_page + 1,
    };
    let mut rows = read::list(pool, &filter).await?;
    let has_more = rows.len() as i64 > query.per_page;
    rows.truncate(query.per_page as usize);
    Ok(DeliveryPage {
        deliveries: rows,
        page: query.page,
        per_page: query.per_page,
        has_more,
    })
}

/// One of the caller's deliveries; one of an instance outside a key's
/// restriction is not found, as an unknown one.
pub async fn get(pool: &Pool, caller: &Principal, id: DeliveryId) -> Result<DeliveryDetail> {
    let delivery = read::get(pool, Some(caller.app_id), id)
        .await?
        .filter(|d| caller.may_access(d.instance_id))
        .ok_or(AppError::NotFound("delivery"))?;
    let attempts = read::attempts(pool, id).await?;
    Ok(DeliveryDetail { delivery, attempts })
}

/// The operator's search across apps (`query::parse_search`'s filters).
pub async fn search(pool: &Pool, params: &HashMap<String, String>) -> Result<SearchPage> {
    let filter = query::parse_search(params)?;
    let mut rows = read::search(pool, &filter).await?;
    let more = rows.len() as i64 >= filter.limit;
    if more {
        rows.truncate((filter.limit - 1) as usize);
    }
    let next_cursor = more
        .then(|| rows.last().map(|d| encode_cursor(d.id)))
        .flatten();
    Ok(SearchPage {
        deliveries: rows,
        next_cursor,
    })
}

/// One delivery of any app, with its attempts, for the operator.
pub async fn detail(pool: &Pool, id: DeliveryId) -> Result<DeliveryDetail> {
    let delivery = read::get(pool, None, id)
        .await?
        .ok_or(AppError::NotFound("delivery"))?;
    let attempts = read::attempts(pool, id).await?;
    Ok(DeliveryDetail { delivery, attempts })
}

/// The other deliveries of a delivery's event to its subscription (a
/// retry's or a replay's), newest first, at most 50; none for an unknown
/// delivery.
pub async fn siblings(pool: &Pool, id: DeliveryId) -> Result<Vec<Delivery>> {
    match read::get(pool, None, id).await? {
        Some(of) => Ok(read::siblings(pool, &of).await?),
        None => Ok(Vec::new()),
    }
}
