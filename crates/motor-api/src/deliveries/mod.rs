//! `/v1/deliveries` (scope `events:read`): an app's deliveries, newest
//! first, and one delivery with every attempt made for it. A key restricted
//! to instances sees only the deliveries of those instances.
//!
//! Where the contract is silent: the list answers `{entregas, pagina,
//! por_pagina, hay_mas}`; `por_pagina` defaults to 50; `key_ids` of an
//! attempt is one string, comma-separated and newest first, as the
//! `X-MW-Key-Id` header of that attempt; a delivery of an instance outside a
//! key's restriction is a 404, a filter naming such an instance a 403.

mod dto;
pub mod retry;

pub use self::dto::DeliveryStateSchema;

use std::collections::HashMap;

use axum::{
    extract::{rejection::QueryRejection, Path, Query, State},
    Json,
};
use motor_domain::{
    delivery::{DeliveryId, DeliveryState},
    time, FieldError, InstanceId, Scope,
};
use motor_store::deliveries::read::{self, AttemptRow, Delivery, Filter};
use serde::Serialize;
use utoipa::ToSchema;

use utoipa_axum::{router::OpenApiRouter, routes};

use crate::{
    auth::Caller,
    error::ApiError,
    extract::{comma_list, path_id},
    AppState,
};

pub const DEFAULT_PER_PAGE: i64 = 50;
pub const MAX_PER_PAGE: i64 = 200;

/// One delivery as listed. Field order is the order on the wire.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = Entrega)]
pub struct DeliveryView {
    /// `X-MW-Delivery-Id`: the same on every retry of this delivery.
    #[schema(format = Uuid)]
    pub delivery_id: String,
    #[schema(format = Uuid)]
    pub suscripcion_id: String,
    /// The subscription's `nombre`.
    pub suscripcion: String,
    #[schema(format = Uuid)]
    pub instance_id: String,
    /// The instance's `nombre`.
    pub instancia: String,
    #[schema(format = Uuid)]
    pub event_id: String,
    pub seq: i64,
    /// The event's type.
    #[serde(rename = "type")]
    pub event_type: String,
    #[schema(value_type = DeliveryStateSchema)]
    pub estado: DeliveryState,
    /// Attempts made so far.
    pub intentos: i32,
    /// When the next attempt is due; `null` once `entregada` or `fallida`.
    #[schema(format = DateTime)]
    pub proximo_intento_en: Option<String>,
    /// HTTP status of the last attempt; `null` before the first or when
    /// no answer came.
    pub ultimo_status: Option<i32>,
    /// Sanitised code of the last failure (`http_503`, `timeout`, …).
    pub ultimo_error: Option<String>,
    #[schema(format = DateTime)]
    pub creada_en: String,
    /// The delivery a replay or a manual retry sends again (also in the
    /// `X-MW-Replay-Of` header); `null` for a live delivery, and for a
    /// replay of an event that had no live delivery to this subscription
    /// (or whose live delivery was purged).
    #[schema(format = Uuid)]
    pub replay_of: Option<String>,
}

/// One attempt of a delivery.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = Intento)]
pub struct AttemptView {
    /// 1, 2, 3, …
    pub numero: i32,
    #[schema(format = DateTime)]
    pub iniciado_en: String,
    pub duracion_ms: i32,
    /// `null` when no answer came (timeout, network error).
    pub status: Option<i32>,
    /// Sanitised code; `null` when delivered.
    pub error: Option<String>,
    /// The key ids that signed it, comma-separated, newest first (as in
    /// `X-MW-Key-Id`).
    #[schema(example = "whk_5f0c6a4e9b1d2c3a4b5c6d7e")]
    pub key_ids: String,
    /// The answer (429 or 503 with `Retry-After`) held every lane of the
    /// subscription until the time it asked for.
    pub throttled: bool,
}

/// One delivery with its attempts.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = EntregaDetalle)]
pub struct DeliveryDetail {
    #[serde(flatten)]
    pub entrega: DeliveryView,
    pub intentos_detalle: Vec<AttemptView>,
}

/// A page of deliveries, newest first.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = EntregaList)]
pub struct DeliveryList {
    pub entregas: Vec<DeliveryView>,
    pub pagina: i64,
    pub por_pagina: i64,
    /// Whether a next page has deliveries.
    pub hay_mas: bool,
}

impl From<Delivery> for DeliveryView {
    fn from(d: Delivery) -> Self {
        Self {
            delivery_id: d.id.to_string(),
            suscripcion_id: d.subscription_id.to_string(),
            suscripcion: d.suscripcion,
            instance_id: d.instance_id.to_string(),
            instancia: d.instancia,
            event_id: d.event_id.to_string(),
            seq: d.seq,
            event_type: d.event_type,
            estado: d.estado,
            intentos: d.intentos,
            proximo_intento_en: d.proximo_intento.as_ref().map(time::format),
            ultimo_status: d.ultimo_status,
            ultimo_error: d.ultimo_error,
            creada_en: time::format(&d.creada_en),
            replay_of: d.replay_of.map(|id| id.to_string()),
        }
    }
}

impl From<AttemptRow> for AttemptView {
    fn from(a: AttemptRow) -> Self {
        Self {
            numero: a.numero,
            iniciado_en: time::format(&a.iniciado_en),
            duracion_ms: a.duracion_ms,
            status: a.status,
            error: a.error,
            key_ids: a.key_ids.join(","),
            throttled: a.throttled,
        }
    }
}

/// The list's query, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListQuery {
    pub estados: Vec<DeliveryState>,
    pub suscripcion_id: Option<motor_domain::subscription::SubscriptionId>,
    pub instancia_id: Option<InstanceId>,
    pub pagina: i64,
    pub por_pagina: i64,
}

impl ListQuery {
    /// Parses the raw query parameters; a bad one is a 422 naming
    /// `query.<name>`. Unknown parameters are ignored.
    pub fn parse(params: &HashMap<String, String>) -> Result<Self, FieldError> {
        let estados = match params.get("estado") {
            None => Vec::new(),
            Some(raw) => comma_list(
                raw,
                "query.estado",
                "must be a comma list of pendiente, entregada, fallida",
                DeliveryState::parse,
            )?,
        };
        let uuid = |name: &'static str| -> Result<Option<uuid::Uuid>, FieldError> {
            params
                .get(name)
                .map(|raw| {
                    raw.trim()
                        .parse()
                        .map_err(|_| FieldError::invalid(format!("query.{name}"), "must be a uuid"))
                })
                .transpose()
        };
        let number = |name: &'static str, default: i64, max: i64| -> Result<i64, FieldError> {
            match params.get(name) {
                None => Ok(default),
                Some(raw) => raw
                    .parse::<i64>()
                    .ok()
                    .filter(|n| (1..=max).contains(n))
                    .ok_or_else(|| {
                        FieldError::invalid(
                            format!("query.{name}"),
                            format!("must be an integer from 1 to {max}"),
                        )
                    }),
            }
        };
        Ok(Self {
            estados,
            suscripcion_id: uuid("suscripcion_id")?
                .map(motor_domain::subscription::SubscriptionId::from_uuid),
            instancia_id: uuid("instancia_id")?.map(InstanceId::from_uuid),
            // A page past this many rows is not a listing any more.
            pagina: number("pagina", 1, 1_000_000)?,
            por_pagina: number("por_pagina", DEFAULT_PER_PAGE, MAX_PER_PAGE)?,
        })
    }
}

/// Lists the app's deliveries, newest first.
#[utoipa::path(get, path = "/v1/deliveries", tag = "deliveries",
    security(("api_key" = ["events:read"])),
    params(("estado" = Option<String>, Query, pattern = "^(pendiente|entregada|fallida)(,(pendiente|entregada|fallida))*$", description = "Comma list of pendiente, entregada, fallida"),
           ("suscripcion_id" = Option<String>, Query, format = Uuid),
           ("instancia_id" = Option<String>, Query, format = Uuid),
           ("pagina" = Option<i64>, Query, minimum = 1, maximum = 1000000, description = "From 1, default 1"),
           ("por_pagina" = Option<i64>, Query, minimum = 1, maximum = 200, description = "1–200, default 50")),
    responses(
        (status = 200, body = DeliveryList),
        (status = 401, body = crate::error::ErrorBody), (status = 403, body = crate::error::ErrorBody),
        (status = 422, body = crate::error::ErrorBody),
    ))]
pub(crate) async fn list_deliveries(
    State(state): State<AppState>,
    caller: Caller,
    query: Result<Query<HashMap<String, String>>, QueryRejection>,
) -> Result<Json<DeliveryList>, ApiError> {
    caller.require(Scope::EventsRead)?;
    let Query(params) = query.map_err(|e| FieldError::invalid("query", e.body_text()))?;
    let query = ListQuery::parse(&params)?;
    if let Some(instance) = query.instancia_id {
        if !caller.0.may_access(instance) {
            return Err(ApiError::Forbidden(
                "this key is restricted to other instances".into(),
            ));
        }
    }
    let filter = Filter {
        app: caller.0.app_id,
        estados: query.estados,
        subscription: query.suscripcion_id,
        instance: query.instancia_id,
        restricted_to: caller.0.instancias.clone(),
        offset: (query.pagina - 1) * query.por_pagina,
        limit: query.por_pagina + 1,
    };
    let mut rows = read::list(&state.pool, &filter).await?;
    let hay_mas = rows.len() as i64 > query.por_pagina;
    rows.truncate(query.por_pagina as usize);
    Ok(Json(DeliveryList {
        entregas: rows.into_iter().map(DeliveryView::from).collect(),
        pagina: query.pagina,
        por_pagina: query.por_pagina,
        hay_mas,
    }))
}

/// One delivery with `intentos_detalle`, every attempt in order.
#[utoipa::path(get, path = "/v1/deliveries/{id}", tag = "deliveries",
    security(("api_key" = ["events:read"])),
    params(("id" = String, Path, format = Uuid, description = "Delivery id")),
    responses(
        (status = 200, body = DeliveryDetail),
        (status = 401, body = crate::error::ErrorBody), (status = 403, body = crate::error::ErrorBody),
        (status = 404, body = crate::error::ErrorBody),
    ))]
pub(crate) async fn get_delivery(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<DeliveryDetail>, ApiError> {
    caller.require(Scope::EventsRead)?;
    let id: DeliveryId = path_id(&id, "delivery")?;
    let delivery = read::get(&state.pool, caller.0.app_id, id)
        .await?
        .filter(|d| caller.0.may_access(d.instance_id))
        .ok_or(ApiError::NotFound("delivery"))?;
    let attempts = read::attempts(&state.pool, id).await?;
    Ok(Json(DeliveryDetail {
        entrega: delivery.into(),
        intentos_detalle: attempts.into_iter().map(AttemptView::from).collect(),
    }))
}

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_deliveries))
        .routes(routes!(get_delivery))
        .merge(retry::router())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(pairs: &[(&str, &str)]) -> Result<ListQuery, FieldError> {
        ListQuery::parse(
            &pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        )
    }

    #[test]
    fn defaults() {
        let q = parse(&[]).unwrap();
        assert_eq!((q.pagina, q.por_pagina), (1, DEFAULT_PER_PAGE));
        assert!(q.estados.is_empty() && q.suscripcion_id.is_none() && q.instancia_id.is_none());
    }

    #[test]
    fn estado_is_a_comma_list_of_known_states() {
        let q = parse(&[("estado", "pendiente,fallida")]).unwrap();
        assert_eq!(q.estados, [DeliveryState::Pending, DeliveryState::Failed]);
        for bad in [
            "",
            "pendiente,",
            "activa",
            "Pendiente",
            "entregada,,fallida",
        ] {
            assert_eq!(
                parse(&[("estado", bad)]).unwrap_err().field,
                "query.estado",
                "{bad:?}"
            );
        }
    }

    #[test]
    fn paging_bounds() {
        assert_eq!(parse(&[("por_pagina", "200")]).unwrap().por_pagina, 200);
        assert_eq!(parse(&[("por_pagina", "1")]).unwrap().por_pagina, 1);
        for bad in ["0", "201", "-1", "x", ""] {
            assert_eq!(
                parse(&[("por_pagina", bad)]).unwrap_err().field,
                "query.por_pagina"
            );
        }
        for bad in ["0", "-3", "1.5", ""] {
            assert_eq!(parse(&[("pagina", bad)]).unwrap_err().field, "query.pagina");
        }
        assert_eq!(parse(&[("pagina", "7")]).unwrap().pagina, 7);
    }

    #[test]
    fn ids_must_be_uuids() {
        assert_eq!(
            parse(&[("suscripcion_id", "x")]).unwrap_err().field,
            "query.suscripcion_id"
        );
        assert_eq!(
            parse(&[("instancia_id", "1")]).unwrap_err().field,
            "query.instancia_id"
        );
        let id = uuid::Uuid::now_v7();
        let q = parse(&[("instancia_id", &id.to_string())]).unwrap();
        assert_eq!(q.instancia_id, Some(InstanceId::from_uuid(id)));
    }
}
