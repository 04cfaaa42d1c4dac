//! The HTTP handlers of commands, named by what they do. Each reads the
//! request, calls `motor_app::commands` (which owns the transaction) and
//! answers the command; the domain names a bad field bare (`chat`,
//! `Idempotency-Key`) and [`located`] says where it came from.

use std::collections::HashMap;

use axum::{
    body::Body,
    extract::{rejection::QueryRejection, Path, Query, State},
    http::{header::LOCATION, HeaderMap, StatusCode},
    response::{IntoResponse, Response},
    Json,
};
use motor_app::{commands, AppError};
use motor_domain::{
    command::{CommandId, IdempotencyKey, KindClass, RawOperation, RawSend},
    time, FieldError, Scope,
};

use super::{CommandList, CommandView, SendMessage, SubmitCommand};
use crate::{
    auth::Caller,
    error::ApiError,
    extract::{parse_json, path_id},
    AppState,
};

/// Largest request body: a `contenido` or `parametros` of 64 KiB of
/// compact JSON, written loosely, and the few other fields.
const MAX_BODY_BYTES: usize = 1024 * 1024;

/// The `Idempotency-Key` header as it arrived; one that is not text is a
/// 422 naming it (the domain checks the rest).
fn idempotency_key(headers: &HeaderMap) -> Result<Option<&str>, ApiError> {
    headers
        .get("idempotency-key")
        .map(|raw| {
            raw.to_str().map_err(|_| {
                FieldError::invalid(
                    "header.Idempotency-Key",
                    "must be 1 to 200 printable ASCII characters",
                )
                .into()
            })
        })
        .transpose()
}

/// A field the domain named bare is a body field, or the header.
fn located(e: AppError) -> ApiError {
    match e {
        AppError::Invalid(mut f) if !f.field.contains('.') => {
            let place = if f.field == IdempotencyKey::FIELD {
                "header"
            } else {
                "body"
            };
            f.field = format!("{place}.{}", f.field);
            ApiError::Field(f)
        }
        e => e.into(),
    }
}

async fn read_body(body: Body) -> Result<axum::body::Bytes, ApiError> {
    axum::body::to_bytes(body, MAX_BODY_BYTES)
        .await
        .map_err(|_| ApiError::BodyTooLarge(MAX_BODY_BYTES))
}

/// 202 with the command and where to read it; a new command wakes this
/// process's executor long-polls waiting on its instance.
fn accepted(state: &AppState, submitted: commands::Submitted) -> Response {
    if submitted.created {
        state.executor.bell.ring(submitted.command.instance_id);
        state
            .metrics
            .commands
            .accepted(match submitted.command.kind.class() {
                KindClass::Send => "envio",
                KindClass::Remote => "remota",
                KindClass::Control => "control",
            });
    }
    let location = format!("/v1/commands/{}", submitted.command.id);
    (
        StatusCode::ACCEPTED,
        [(LOCATION, location)],
        Json(CommandView::from(submitted.command)),
    )
        .into_response()
}

/// Sends a message: stores a `mensaje` command, `en_cola` and due at once,
/// with its `command.accepted`; answered only once committed.
#[utoipa::path(post, path = "/v1/instances/{id}/messages", tag = "commands",
    security(("api_key" = ["commands:write"])),
    params(("id" = String, Path, format = Uuid, description = "Instance id"),
           ("Idempotency-Key" = String, Header, min_length = 1, max_length = 200, pattern = "^[!-~](?:[ -~]{0,198}[!-~])?$", description = "Required, 1–200 characters, per app and instance: a repeat answers the stored command (also after a relink); the same key with another request is a 409")),
    request_body = SendMessage,
    responses(
        (status = 202, body = CommandView, description = "Stored (or, for a repeated Idempotency-Key, stored before): the command as it is now",
            headers(("Location" = String, description = "`/v1/commands/{id}`"))),
        (status = 403, body = crate::error::ErrorBody), (status = 404, body = crate::error::ErrorBody),
        (status = 409, body = crate::error::ErrorBody, description = "The Idempotency-Key was used for another request, or `generacion_esperada` is not the instance's generation"),
        (status = 413, body = crate::error::ErrorBody), (status = 422, body = crate::error::ErrorBody),
    ))]
pub(super) async fn send_message(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    caller.require(Scope::CommandsWrite)?;
    let instance = caller.writable_instance(&state, &id).await?;
    let key = idempotency_key(&headers)?;
    let input: SendMessage = parse_json(&read_body(body).await?)?;
    let raw = RawSend {
        chat: Some(&input.chat),
        content: Some(&input.contenido),
        options: input.raw_options(),
    };
    let submitted = commands::send(
        &state.commands,
        &caller.0,
        instance,
        key,
        raw,
        time::now_millis(),
    )
    .await
    .map_err(located)?;
    Ok(accepted(&state, submitted))
}

/// Submits any other command (a remote operation or instance control),
/// `aceptado`; a remote operation appends `command.accepted`, a control
/// command nothing (its effect shows as `state.changed`).
#[utoipa::path(post, path = "/v1/instances/{id}/commands", tag = "commands",
    security(("api_key" = ["commands:write"])),
    params(("id" = String, Path, format = Uuid, description = "Instance id"),
           ("Idempotency-Key" = Option<String>, Header, min_length = 1, max_length = 200, pattern = "^[!-~](?:[ -~]{0,198}[!-~])?$", description = "Optional, 1–200 characters, per app and instance: a repeat answers the stored command; the same key with another request is a 409")),
    request_body = SubmitCommand,
    responses(
        (status = 202, body = CommandView, description = "Stored (or, for a repeated Idempotency-Key, stored before): the command as it is now",
            headers(("Location" = String, description = "`/v1/commands/{id}`"))),
        (status = 403, body = crate::error::ErrorBody), (status = 404, body = crate::error::ErrorBody),
        (status = 409, body = crate::error::ErrorBody, description = "The Idempotency-Key was used for another request, or `generacion_esperada` is not the instance's generation"),
        (status = 413, body = crate::error::ErrorBody), (status = 422, body = crate::error::ErrorBody),
    ))]
pub(super) async fn submit_command(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    caller.require(Scope::CommandsWrite)?;
    let instance = caller.writable_instance(&state, &id).await?;
    let key = idempotency_key(&headers)?;
    let input: SubmitCommand = parse_json(&read_body(body).await?)?;
    let raw = RawOperation {
        kind: Some(&input.tipo),
        parameters: input.parametros.as_ref(),
        options: input.raw_options(),
    };
    let submitted = commands::submit(
        &state.commands,
        &caller.0,
        instance,
        key,
        raw,
        time::now_millis(),
    )
    .await
    .map_err(located)?;
    Ok(accepted(&state, submitted))
}

/// Lists an instance's commands, newest first.
#[utoipa::path(get, path = "/v1/instances/{id}/commands", tag = "commands",
    security(("api_key" = ["commands:read"])),
    params(("id" = String, Path, format = Uuid, description = "Instance id"),
           ("status" = Option<String>, Query, pattern = "^(aceptado|en_cola|ejecutando|enviado|completado|fallido|ambiguo|cancelado)(,(aceptado|en_cola|ejecutando|enviado|completado|fallido|ambiguo|cancelado))*$", description = "Comma list of statuses"),
           ("pagina" = Option<i64>, Query, minimum = 1, maximum = 1000000, description = "From 1, default 1"),
           ("por_pagina" = Option<i64>, Query, minimum = 1, maximum = 200, description = "1–200, default 50")),
    responses(
        (status = 200, body = CommandList),
        (status = 403, body = crate::error::ErrorBody), (status = 404, body = crate::error::ErrorBody),
        (status = 422, body = crate::error::ErrorBody),
    ))]
pub(super) async fn list_commands(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    query: Result<Query<HashMap<String, String>>, QueryRejection>,
) -> Result<Json<CommandList>, ApiError> {
    caller.require(Scope::CommandsRead)?;
    let instance = caller.instance(&state, &id).await?;
    let Query(params) = query.map_err(|e| FieldError::invalid("query", e.body_text()))?;
    let page = commands::list(&state.pool, &caller.0, instance, &params)
        .await
        .map_err(ApiError::in_query)?;
    Ok(Json(CommandList {
        commands: page.commands.into_iter().map(CommandView::from).collect(),
        pagina: page.page,
        por_pagina: page.per_page,
        hay_mas: page.has_more,
    }))
}

/// One command, as it is now.
#[utoipa::path(get, path = "/v1/commands/{id}", tag = "commands",
    security(("api_key" = ["commands:read"])),
    params(("id" = String, Path, format = Uuid, description = "Command id")),
    responses(
        (status = 200, body = CommandView),
        (status = 403, body = crate::error::ErrorBody), (status = 404, body = crate::error::ErrorBody),
    ))]
pub(super) async fn get_command(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<CommandView>, ApiError> {
    caller.require(Scope::CommandsRead)?;
    let id: CommandId = path_id(&id, "command")?;
    let command = commands::get(&state.pool, &caller.0, id).await?;
    Ok(Json(command.into()))
}

/// Cancels a command while `aceptado` or `en_cola` (appending
/// `command.cancelled`); once an executor took it, or it ended, 409: it
/// may have had an effect outside.
#[utoipa::path(post, path = "/v1/commands/{id}/cancel", tag = "commands",
    security(("api_key" = ["commands:write"])),
    params(("id" = String, Path, format = Uuid, description = "Command id")),
    responses(
        (status = 200, body = CommandView, description = "Now `cancelado`"),
        (status = 403, body = crate::error::ErrorBody), (status = 404, body = crate::error::ErrorBody),
        (status = 409, body = crate::error::ErrorBody, description = "The command is `ejecutando` or ended"),
    ))]
pub(super) async fn cancel_command(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<CommandView>, ApiError> {
    caller.require(Scope::CommandsWrite)?;
    let id: CommandId = path_id(&id, "command")?;
    let command = commands::cancel(
        &state.pool,
        state.ledger.after_commit.as_deref(),
        &caller.0,
        id,
        time::now_millis(),
    )
    .await?;
    Ok(Json(command.into()))
}
