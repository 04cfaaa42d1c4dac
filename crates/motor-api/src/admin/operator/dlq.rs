//! The DLQ for the operator: `GET /v1/admin/dlq` (summary by subscription
//! and error code) and `POST /v1/admin/dlq/retry` (a selection of failed
//! deliveries sent again through the replay machinery: one replay per
//! subscription, recorded with its motivo and `solicitado_por` =
//! `operador`; the failed deliveries stay in the DLQ as history).

use std::collections::BTreeMap;

use axum::{
    body::Body,
    extract::{rejection::QueryRejection, Query, State},
    http::{HeaderMap, StatusCode},
    response::IntoResponse,
    Json,
};
use motor_domain::{
    delivery::LastError, replay::MAX_REASON_CHARS, subscription::SubscriptionId, time, AppId,
    EventId, FieldError,
};
use motor_store::operator_view::{self, DlqSelection};
use uuid::Uuid;

use super::{DlqGroup, DlqQuery, DlqSummary, RetryDlq, RetryDlqBody, RetryDlqResult};
use crate::{
    auth::Operator,
    error::ApiError,
    extract::{parse_json, read_body},
    replays::{create_replay, idempotency_key, CreateReplay, OPERATOR},
    subscriptions::rules::Access,
    AppState,
};

/// Most failed deliveries one retry sends again.
pub const MAX_RETRY: i64 = 500;

pub async fn summary(state: &AppState, app: Option<Uuid>) -> Result<DlqSummary, ApiError> {
    let groups = operator_view::dlq(&state.pool, app).await?;
    Ok(DlqSummary {
        total: groups.iter().map(|g| g.failed).sum(),
        grupos: groups
            .into_iter()
            .map(|g| DlqGroup {
                app_id: g.app_id.to_string(),
                suscripcion_id: g.subscription_id.to_string(),
                suscripcion: g.subscription_name,
                estado_suscripcion: g.subscription_state,
                ultimo_error: g.last_error,
                fallidas: g.failed,
                ultima_en: time::format(&g.last_failed_at),
            })
            .collect(),
    })
}

/// The DLQ by subscription and error code.
#[utoipa::path(get, path = "/v1/admin/dlq", tag = "admin",
    security(("admin_token" = [])),
    params(DlqQuery),
    responses(
        (status = 200, body = DlqSummary),
        (status = 401, body = crate::error::ErrorBody), (status = 422, body = crate::error::ErrorBody),
    ))]
pub(crate) async fn get_dlq(
    _: Operator,
    State(state): State<AppState>,
    query: Result<Query<DlqQuery>, QueryRejection>,
) -> Result<Json<DlqSummary>, ApiError> {
    let Query(query) = query.map_err(|e| FieldError::invalid("query", e.body_text()))?;
    let app = query
        .app_id
        .as_deref()
        .map(|raw| {
            raw.trim()
                .parse::<Uuid>()
                .map_err(|_| FieldError::invalid("query.app_id", "must be a uuid"))
        })
        .transpose()?;
    Ok(Json(summary(&state, app).await?))
}

fn uuid_field(raw: Option<&str>, field: &'static str) -> Result<Option<Uuid>, FieldError> {
    raw.map(|r| {
        r.trim()
            .parse()
            .map_err(|_| FieldError::invalid(field, "must be a uuid"))
    })
    .transpose()
}

/// Checks a retry request; nothing is read or written before it passes.
pub fn parse_retry(input: &RetryDlq) -> Result<(DlqSelection, String), FieldError> {
    motor_domain::operator::refuse_nul(&input.motivo, "body.motivo")?;
    let motivo = input.motivo.trim();
    let chars = motivo.chars().count();
    if chars == 0 || chars > MAX_REASON_CHARS {
        return Err(FieldError::invalid(
            "body.motivo",
            format!("must be 1 to {MAX_REASON_CHARS} characters"),
        ));
    }
    let subscription = uuid_field(input.suscripcion_id.as_deref(), "body.suscripcion_id")?;
    let app = uuid_field(input.app_id.as_deref(), "body.app_id")?;
    let errores = input
        .ultimo_error
        .iter()
        .flatten()
        .map(|raw| {
            LastError::parse(raw.trim())
                .map(|e| e.to_string())
                .ok_or_else(|| FieldError::invalid("body.ultimo_error", "unknown error code"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let ids = input.delivery_ids.as_deref().unwrap_or_default();
    if input.delivery_ids.is_some() && (ids.is_empty() || ids.len() > MAX_RETRY as usize) {
        return Err(FieldError::invalid(
            "body.delivery_ids",
            format!("must list 1 to {MAX_RETRY} delivery ids"),
        ));
    }
    let delivery_ids = ids
        .iter()
        .map(|raw| {
            raw.trim()
                .parse()
                .map_err(|_| FieldError::invalid("body.delivery_ids", "must be uuids"))
        })
        .collect::<Result<Vec<Uuid>, _>>()?;
    if subscription.is_none() && app.is_none() && delivery_ids.is_empty() {
        return Err(FieldError::invalid(
            "body.suscripcion_id",
            "name a subscription, an app or delivery_ids (the whole DLQ is never retried at once)",
        ));
    }
    Ok((
        DlqSelection {
            subscription,
            app,
            last_errors: errores,
            delivery_ids,
            limit: MAX_RETRY,
        },
        motivo.to_owned(),
    ))
}

/// Sends a DLQ selection again: one replay (of the selected events) per
/// subscription, under `key` + the subscription id.
pub async fn retry(
    state: &AppState,
    key: &str,
    input: &RetryDlq,
) -> Result<RetryDlqResult, ApiError> {
    let (selection, motivo) = parse_retry(input)?;
    let selected = operator_view::failed_selection(&state.pool, &selection).await?;
    let mut by_subscription: BTreeMap<Uuid, (AppId, Vec<EventId>)> = BTreeMap::new();
    for (app, sub, event) in selected {
        let entry = by_subscription
            .entry(*sub.as_uuid())
            .or_insert_with(|| (app, Vec::new()));
        if !entry.1.contains(&event) {
            entry.1.push(event);
        }
    }
    let mut replays = Vec::new();
    for (sub, (app, events)) in by_subscription {
        let access = Access {
            app,
            restriction: Vec::new(),
        };
        let replay = create_replay(
            &state.pool,
            &access,
            OPERATOR,
            SubscriptionId::from_uuid(sub),
            &format!("{key}:{sub}"),
            CreateReplay {
                instancia_id: None,
                desde_seq: None,
                hasta_seq: None,
                event_ids: Some(events.iter().map(|e| e.to_string()).collect()),
                motivo: motivo.clone(),
            },
        )
        .await?;
        replays.push(replay);
    }
    Ok(RetryDlqResult {
        entregas: replays.iter().map(|r| r.entregas).sum(),
        replays,
    })
}

/// Sends failed deliveries again, as replays (new delivery ids, the same
/// events), with the motivo audited.
#[utoipa::path(post, path = "/v1/admin/dlq/retry", tag = "admin",
    security(("admin_token" = [])),
    params(("Idempotency-Key" = String, Header, min_length = 1, max_length = 200, description = "Required, 1–200 characters; a repeat answers the same replays")),
    request_body = RetryDlqBody,
    responses(
        (status = 202, body = RetryDlqResult),
        (status = 400, body = crate::error::ErrorBody), (status = 401, body = crate::error::ErrorBody),
        (status = 409, body = crate::error::ErrorBody), (status = 422, body = crate::error::ErrorBody),
    ))]
pub(crate) async fn retry_dlq(
    _: Operator,
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Body,
) -> Result<impl IntoResponse, ApiError> {
    let key = idempotency_key(&headers)?;
    let input: RetryDlq = parse_json(&read_body(body).await?)?;
    let result = retry(&state, &key, &input).await?;
    Ok((StatusCode::ACCEPTED, Json(result)))
}
