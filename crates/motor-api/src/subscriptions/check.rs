//! `POST /v1/subscriptions/{id}/check`: the receiver conformance battery
//! (`motor check-receiver`'s) against a registered webhook subscription,
//! with its live keys and signing profile, through a client that connects
//! only where a delivery may; answered as the graded table in JSON, the
//! same fields `motor check-receiver --json` prints.

use axum::{
    extract::{Path, State},
    Json,
};
use motor_app::subscriptions::check;
use motor_destinations::check::{CheckResult, Got, Report, Timings, Verdict};
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::{router::OpenApiRouter, routes};

use crate::{auth::Caller, error::ApiError, extract::path_id, subscriptions::manager, AppState};

/// The graded battery.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct CheckReport {
    /// The subscription's URL, as checked.
    pub url: String,
    /// The profile graded: the subscription's `firma` (`mw-v1`, `t-v1`,
    /// `standard-webhooks`) under the `motor` contract, else its
    /// `contrato` (`visito`, `asixto`, `standard-webhooks`).
    pub perfil: String,
    /// `true` when every check passed.
    pub aprobado: bool,
    pub comprobaciones: Vec<CheckRow>,
    pub tiempos: CheckTimings,
}

/// One graded check.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct CheckRow {
    /// `entrega_valida`, `evento_repetido`, `reproduccion`, `seq_menor`,
    /// `timestamp_vencido`, `timestamp_futuro`, `cuerpo_alterado`,
    /// `firma_incorrecta`, `segunda_firma_valida` (not under `visito`,
    /// which signs with one key), `cabecera_repetida`, `cuerpo_grande`,
    /// `tiempos`.
    #[schema(example = "timestamp_vencido")]
    #[serde(rename = "nombre")]
    pub name: String,
    /// What the contract requires: `2xx`, a status, `4xx (no 408/429)`,
    /// `no 2xx` (a refusal under `visito` or `asixto`, whose documents
    /// name no code), or `p99 < N ms`.
    #[schema(example = "408")]
    #[serde(rename = "esperado")]
    pub expected: String,
    pub obtenido: CheckGot,
    pub veredicto: CheckVerdict,
    /// Why it failed, in a few words; absent when it passed.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[serde(rename = "motivo")]
    pub reason: Option<String>,
    /// How long the receiver took to answer this check.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[serde(rename = "duracion_ms")]
    pub duration_ms: Option<u64>,
}

/// What the receiver answered.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct CheckGot {
    /// The HTTP status, when it answered.
    pub status: Option<u16>,
    /// The sanitised transport code (`timeout`, `conexion_rechazada`, …)
    /// when it did not.
    pub error: Option<String>,
}

#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum CheckVerdict {
    Ok,
    Falla,
}

/// The answer times of every request the battery sent.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct CheckTimings {
    pub muestras: usize,
    pub p50_ms: u64,
    pub p99_ms: u64,
    /// The attempt timeout (`webhooks.timeout_segundos`) the run used.
    pub timeout_ms: u64,
}

impl From<Report> for CheckReport {
    fn from(r: Report) -> Self {
        Self {
            url: r.url,
            perfil: r.profile.to_owned(),
            aprobado: r.passed,
            comprobaciones: r.checks.into_iter().map(CheckRow::from).collect(),
            tiempos: r.timings.into(),
        }
    }
}

impl From<CheckResult> for CheckRow {
    fn from(c: CheckResult) -> Self {
        let Got { status, error, .. } = c.got;
        Self {
            name: c.name.to_owned(),
            expected: c.expected.to_string(),
            obtenido: CheckGot { status, error },
            veredicto: match c.verdict {
                Verdict::Pass => CheckVerdict::Ok,
                Verdict::Fail => CheckVerdict::Falla,
            },
            reason: c.reason,
            duration_ms: c.duration_ms,
        }
    }
}

impl From<Timings> for CheckTimings {
    fn from(t: Timings) -> Self {
        Self {
            muestras: t.samples,
            p50_ms: t.p50_ms,
            p99_ms: t.p99_ms,
            timeout_ms: t.timeout_ms,
        }
    }
}

/// Grades the subscription's receiver against the contract: a battery of
/// signed requests (a valid delivery, a retry, a replay, a lower seq, a
/// stale and a future timestamp, a tampered body, a wrong signature, a
/// second valid signature, a repeated signature header, a body at the
/// size cap) and the answer times. The events are never in the ledger
/// (type `webhook.check`, a fresh instance id) and each run uses new ids.
/// The answer comes when the battery ends: up to twelve requests, each
/// within the contract's attempt timeout (`webhooks.timeout_segundos`
/// unless the contract fixes one). Rendered as the subscription's
/// deliveries are: its `contrato`'s body, headers and signature.
///
/// Webhook subscriptions only: a broker subscription (`amqp://`,
/// `nats://`) is a 409, as are a deleted one and one whose host the
/// allowed destinations no longer admit (nothing is sent). A failing
/// receiver is a 200 with `aprobado: false`.
#[utoipa::path(post, path = "/v1/subscriptions/{id}/check", tag = "subscriptions",
    security(("api_key" = ["subscriptions:manage"])),
    params(("id" = String, Path, format = Uuid)),
    responses(
        (status = 200, body = CheckReport),
        (status = 401, body = crate::error::ErrorBody), (status = 403, body = crate::error::ErrorBody),
        (status = 404, body = crate::error::ErrorBody),
        (status = 409, body = crate::error::ErrorBody, description = "Not a webhook subscription, deleted, its host no longer allowed, or no live key"),
    ))]
pub(crate) async fn check_subscription(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<CheckReport>, ApiError> {
    let access = manager(&caller)?;
    let id = path_id(&id, "subscription")?;
    let report = check::run(
        &state.pool,
        &state.sealing,
        &state.destinations,
        &access,
        id,
    )
    .await?;
    Ok(Json(report.into()))
}

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(check_subscription))
}
