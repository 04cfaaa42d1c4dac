//! The HTTP handlers of the executor resource, named by what they do.
//! Each reads the request, calls `motor_app::executor` and answers its
//! DTO; the application names fields bare (`status`, `wait`) and the
//! handler says where they came from (`body.status`, `query.wait`).

use std::collections::HashMap;

use axum::{
    body::Body,
    extract::{rejection::QueryRejection, Path, Query, State},
    Json,
};
use motor_app::{executor, Access, AppError};
use motor_domain::{command::RawReport, instance_state::RawStateReport, FieldError, Scope};

use super::dto::{
    ClaimAnswer, DueCommand, DuePage, ExecutorCommand, HeartbeatInput, ReportInput, StateAnswer,
    StateInput,
};
use crate::{
    auth::Caller,
    error::ApiError,
    extract::{parse_json, read_body},
    AppState,
};

/// An application error whose field is named bare, located in `place`
/// (`body`, `query`).
fn located(place: &str, e: AppError) -> ApiError {
    match e {
        AppError::Invalid(mut f) => {
            f.field = format!("{place}.{}", f.field);
            ApiError::Field(f)
        }
        other => other.into(),
    }
}

/// Claims a command: `aceptado`/`en_cola` → `ejecutando` with a lease.
///
/// A compare-and-set: of two claims, or a claim and a cancel, exactly one
/// wins; the others get a 409. The answer carries the command's full
/// content and the lease token (`reserva`) its report must present before
/// `reservado_hasta`. A command whose `expires_at` passed is failed
/// instead (`comando_vencido`) and one whose `generacion_esperada` is no
/// longer the instance's generation too (`generacion_cambiada`): 409, and
/// nobody runs it.
#[utoipa::path(post, path = "/v1/executor/commands/{id}/claim", tag = "executor",
    security(("api_key" = ["commands:execute"])),
    params(("id" = String, Path, format = Uuid, description = "Command id")),
    responses(
        (status = 200, body = ClaimAnswer, description = "Claimed: now `ejecutando`"),
        (status = 401, body = crate::error::ErrorBody), (status = 403, body = crate::error::ErrorBody),
        (status = 404, body = crate::error::ErrorBody),
        (status = 409, body = crate::error::ErrorBody, description = "Not claimable: claimed, finished, cancelled, not due yet, expired or for another generation"),
        (status = 503, body = crate::error::ErrorBody),
    ))]
pub(super) async fn claim_command(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<ClaimAnswer>, ApiError> {
    caller.require(Scope::CommandsExecute)?;
    let id = executor::command_id(&id)?;
    let claimed = executor::claim(
        &state.pool,
        &Access::from(&caller.0),
        id,
        state.executor.config.lease,
    )
    .await?;
    state.metrics.commands.claims.inc();
    let command = ExecutorCommand::from(&claimed.command);
    Ok(Json(ClaimAnswer {
        reserva: claimed.lease.to_string(),
        reservado_hasta: command.reservado_hasta.clone().unwrap_or_default(),
        comando: command,
    }))
}

/// Reports a claimed command's outcome under its lease.
///
/// `enviado` appends `message.sent`, `fallido` `command.failed`,
/// `ambiguo` `command.ambiguous`, in the transaction that records it;
/// `completado` appends nothing; `en_cola` defers the command to
/// `next_try` (it is claimable again then). The lease token travels in
/// the body as `reserva`. 409 when the lease is not the command's
/// current one or the command is no longer `ejecutando`.
#[utoipa::path(post, path = "/v1/executor/commands/{id}/report", tag = "executor",
    security(("api_key" = ["commands:execute"])),
    params(("id" = String, Path, format = Uuid, description = "Command id")),
    request_body = ReportInput,
    responses(
        (status = 200, body = ExecutorCommand, description = "Recorded: the command as it is now"),
        (status = 400, body = crate::error::ErrorBody), (status = 401, body = crate::error::ErrorBody),
        (status = 403, body = crate::error::ErrorBody), (status = 404, body = crate::error::ErrorBody),
        (status = 409, body = crate::error::ErrorBody, description = "Lease lost, or the command is no longer `ejecutando`"),
        (status = 413, body = crate::error::ErrorBody), (status = 422, body = crate::error::ErrorBody),
        (status = 503, body = crate::error::ErrorBody),
    ))]
pub(super) async fn report_command(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    body: Body,
) -> Result<Json<ExecutorCommand>, ApiError> {
    caller.require(Scope::CommandsExecute)?;
    let id = executor::command_id(&id)?;
    let input: ReportInput = parse_json(&read_body(body).await?)?;
    let raw = RawReport {
        status: input.status.as_deref(),
        provider_message_id: input.provider_message_id.as_deref(),
        chat: input.chat.as_deref(),
        accepted_at: input.aceptado_en.as_deref(),
        error_code: input.error_code.as_deref(),
        stage: input.stage.as_deref(),
        server_code: input.server_code.as_deref(),
        next_try: input.next_try.as_deref(),
    };
    let command = executor::report(
        &state.pool,
        &state.executor.bell,
        &Access::from(&caller.0),
        id,
        input.reserva.as_deref(),
        raw,
    )
    .await
    .map_err(|e| located("body", e))?;
    state.metrics.commands.reported(command.status.as_str());
    Ok(Json(ExecutorCommand::from(&command)))
}

/// Extends a claimed command's lease (a heartbeat).
///
/// An executor whose provider call takes long sends this before
/// `reservado_hasta`, with the claim's `reserva`: the lease then ends one
/// lease length (`MOTOR_EXECUTOR_LEASE_SECS`) from now, never sooner than
/// before. The status does not change and nothing is appended. 409 once
/// the lease is lost — another token, or the command is no longer
/// `ejecutando` (reported, or the sweeper made it `ambiguo` when the
/// lease ran out): the executor must not report then.
#[utoipa::path(post, path = "/v1/executor/commands/{id}/heartbeat", tag = "executor",
    security(("api_key" = ["commands:execute"])),
    params(("id" = String, Path, format = Uuid, description = "Command id")),
    request_body = HeartbeatInput,
    responses(
        (status = 200, body = ExecutorCommand, description = "Extended: the command, `reservado_hasta` its lease's new end"),
        (status = 400, body = crate::error::ErrorBody), (status = 401, body = crate::error::ErrorBody),
        (status = 403, body = crate::error::ErrorBody), (status = 404, body = crate::error::ErrorBody),
        (status = 409, body = crate::error::ErrorBody, description = "Lease lost: another token, or the command is no longer `ejecutando`"),
        (status = 413, body = crate::error::ErrorBody), (status = 422, body = crate::error::ErrorBody),
        (status = 503, body = crate::error::ErrorBody),
    ))]
pub(super) async fn heartbeat_command(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    body: Body,
) -> Result<Json<ExecutorCommand>, ApiError> {
    caller.require(Scope::CommandsExecute)?;
    let id = executor::command_id(&id)?;
    let input: HeartbeatInput = parse_json(&read_body(body).await?)?;
    let command = executor::heartbeat(
        &state.pool,
        &Access::from(&caller.0),
        id,
        input.reserva.as_deref(),
        state.executor.config.lease,
    )
    .await
    .map_err(|e| located("body", e))?;
    state.metrics.commands.heartbeats.inc();
    Ok(Json(ExecutorCommand::from(&command)))
}

/// Long-polls an instance's claimable commands.
///
/// Answers the instance's commands that an executor may claim now
/// (`aceptado`, or `en_cola` with `next_try` due; not expired), oldest
/// first, as the `{prefix}.commands` records describe them. With none,
/// waits up to `wait` seconds for one (woken when one is committed or
/// falls due), then answers an empty list. Answering is not claiming.
#[utoipa::path(get, path = "/v1/executor/commands", tag = "executor",
    security(("api_key" = ["commands:execute"])),
    params(("instance" = String, Query, format = Uuid, description = "The instance whose commands to wait for"),
           ("wait" = Option<u32>, Query, minimum = 0, maximum = 30, description = "Seconds to wait for a command, 0–30 (default 0)"),
           ("limit" = Option<u32>, Query, minimum = 1, maximum = 100, description = "1–100, default 10")),
    responses(
        (status = 200, body = DuePage),
        (status = 401, body = crate::error::ErrorBody), (status = 403, body = crate::error::ErrorBody),
        (status = 404, body = crate::error::ErrorBody), (status = 422, body = crate::error::ErrorBody),
        (status = 503, body = crate::error::ErrorBody),
    ))]
pub(super) async fn poll_commands(
    State(state): State<AppState>,
    caller: Caller,
    query: Result<Query<HashMap<String, String>>, QueryRejection>,
) -> Result<Json<DuePage>, ApiError> {
    caller.require(Scope::CommandsExecute)?;
    let Query(params) = query.map_err(|e| FieldError::invalid("query", e.body_text()))?;
    // A misspelt `wait` would answer at once, silently: refuse it.
    if let Some(name) = params
        .keys()
        .find(|k| !["instance", "wait", "limit"].contains(&k.as_str()))
    {
        let field = if name.is_empty() {
            "query".to_owned()
        } else {
            format!("query.{name}")
        };
        return Err(FieldError::invalid(field, "is not a parameter of this route").into());
    }
    let raw = params
        .get("instance")
        .ok_or_else(|| FieldError::invalid("query.instance", "is required"))?;
    if raw.parse::<uuid::Uuid>().is_err() {
        return Err(FieldError::invalid("query.instance", "must be an instance id").into());
    }
    let instance = caller.instance(&state, raw).await?;
    let query = executor::PollQuery::parse(
        params.get("wait").map(String::as_str),
        params.get("limit").map(String::as_str),
        &state.executor.config,
    )
    .map_err(|e| located("query", e.into()))?;
    let stop = state.streams.shutdown().clone();
    let _waiting = state.metrics.commands.waiting();
    let due = executor::poll(
        &state.pool,
        &state.executor.bell,
        &state.executor.config,
        &Access::from(&caller.0),
        instance,
        query,
        async move { stop.cancelled().await },
    )
    .await?;
    Ok(Json(DuePage {
        commands: due.iter().map(DueCommand::from).collect(),
    }))
}

/// Reports an instance's connection state.
///
/// A change appends `state.changed` (`estado`, `estado_anterior`,
/// `revinculada`, `motivo`; `command_id` when a control command caused
/// it). `revinculada: true` (with `conectada`) bumps the instance's
/// `generation` in the same transaction: the event is the first of the
/// new generation, earlier events keep theirs, and commands bound to the
/// old one (`generacion_esperada`) are refused. The same state again
/// without a relink appends nothing (`seq` is `null`).
#[utoipa::path(post, path = "/v1/executor/instances/{id}/state", tag = "executor",
    security(("api_key" = ["commands:execute"])),
    params(("id" = String, Path, format = Uuid, description = "Instance id")),
    request_body = StateInput,
    responses(
        (status = 200, body = StateAnswer),
        (status = 400, body = crate::error::ErrorBody), (status = 401, body = crate::error::ErrorBody),
        (status = 403, body = crate::error::ErrorBody), (status = 404, body = crate::error::ErrorBody),
        (status = 413, body = crate::error::ErrorBody), (status = 422, body = crate::error::ErrorBody),
        (status = 503, body = crate::error::ErrorBody),
    ))]
pub(super) async fn report_state(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    body: Body,
) -> Result<Json<StateAnswer>, ApiError> {
    caller.require(Scope::CommandsExecute)?;
    let instance = caller.writable_instance(&state, &id).await?;
    let input: StateInput = parse_json(&read_body(body).await?)?;
    let raw = RawStateReport {
        state: input.estado.as_deref(),
        relinked: input.revinculada,
        reason: input.motivo.as_deref(),
    };
    let change = executor::report_state(
        &state.pool,
        &Access::from(&caller.0),
        instance,
        raw,
        input.command_id.as_deref(),
    )
    .await
    .map_err(|e| located("body", e))?;
    Ok(Json(StateAnswer::new(instance, &change)))
}
