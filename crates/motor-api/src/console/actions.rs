//! The console's actions. Each is a POST that needs a valid session and
//! the session's CSRF token (`super::actor`); a retry first shows what it
//! will send again and asks for the motivo (a second POST with
//! `confirmar=si` does it). Bad input answers the form again with the field
//! named and nothing changed.

use axum::{
    extract::{rejection::FormRejection, Form, Path, State},
    http::{HeaderMap, StatusCode},
    response::{IntoResponse, Redirect, Response},
};
use maud::{html, Markup};

use super::{
    actor,
    html::{csrf_field, error_box, ok_box, page},
    session::Session,
    Fields,
};
use motor_app::dlq::{self, RetrySelection};

use crate::{
    admin::operator::{RetryDlq, RetryDlqResult},
    ApiError, AppState,
};

fn message(e: &ApiError) -> String {
    match e {
        ApiError::Field(f) => format!("{}: {}", f.field, f.message),
        other => other.to_string(),
    }
}

fn failed(session: &Session, title: &str, active: &str, e: &ApiError, back: &str) -> Response {
    let status = e.status_code();
    let body = html! {
        (error_box(&message(e)))
        p { "No se cambió nada. " a href=(back) { "Volver" } }
    };
    (status, page(title, active, Some(&session.csrf), body)).into_response()
}

pub(crate) async fn close_alert(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
    form: Result<Form<Fields>, FormRejection>,
) -> Response {
    let (session, _) = match actor(&state, &headers, &form) {
        Ok(ok) => ok,
        Err(refused) => return *refused,
    };
    let result = match id.parse::<uuid::Uuid>() {
        Ok(id) => motor_app::alerts::close(&state.pool, id)
            .await
            .map_err(ApiError::from),
        Err(_) => Err(ApiError::NotFound("alert")),
    };
    match result {
        Ok(_) => Redirect::to("/console/alerts").into_response(),
        Err(e) => failed(
            &session,
            "Alertas",
            "/console/alerts",
            &e,
            "/console/alerts",
        ),
    }
}

/// The confirmation step of a retry: what will go out again, the motivo
/// to give (kept if one was typed), and the button that does it.
fn confirm_page(
    session: &Session,
    action: &str,
    what: &str,
    fields: &Fields,
    error: Option<&str>,
) -> Response {
    let body = confirm_body(&session.csrf, action, what, fields, error);
    let status = if error.is_some() {
        StatusCode::UNPROCESSABLE_ENTITY
    } else {
        StatusCode::OK
    };
    (
        status,
        page(
            "Confirmar reintento",
            "/console/dlq",
            Some(&session.csrf),
            body,
        ),
    )
        .into_response()
}

/// The confirmation form: the other fields of the first POST go along
/// hidden, the motivo is asked for (kept if one was typed).
pub(super) fn confirm_body(
    csrf: &str,
    action: &str,
    what: &str,
    fields: &Fields,
    error: Option<&str>,
) -> Markup {
    let mut kept: Vec<(&String, &String)> = fields
        .iter()
        .filter(|(k, _)| !["csrf", "motivo", "confirmar"].contains(&k.as_str()))
        .collect();
    kept.sort();
    let motivo = fields.get("motivo").map(String::as_str).unwrap_or_default();
    html! {
        @if let Some(error) = error { (error_box(error)) }
        p {
            "Se enviarán de nuevo, como entregas nuevas de los mismos eventos (un replay \
             registrado con su motivo): " strong { (what) } "."
        }
        form method="post" action=(action) id="confirmar" {
            (csrf_field(csrf))
            @for (name, value) in kept {
                input type="hidden" name=(name) value=(value);
            }
            input type="hidden" name="confirmar" value="si";
            label {
                "Motivo (1–300 caracteres) "
                input name="motivo" id="motivo" size="50" maxlength="300" value=(motivo);
            }
            " "
            button id="confirmar-btn" { "Confirmar el reintento" }
        }
    }
}

/// Runs a retry once confirmed with a motivo; a new Idempotency-Key per
/// confirmation (the form is the operator's single intent).
async fn run_retry(
    state: &AppState,
    session: &Session,
    action: &str,
    what: &str,
    fields: &Fields,
    input: RetryDlq,
) -> Result<RetryDlqResult, Response> {
    if fields.get("confirmar").map(String::as_str) != Some("si") {
        return Err(confirm_page(session, action, what, fields, None));
    }
    // The form's fields travel in the POST's body: `body.motivo`.
    let selection = RetrySelection::from(&input);
    if let Err(e) = dlq::parse_retry(&selection) {
        let text = message(&ApiError::in_body(e));
        return Err(confirm_page(session, action, what, fields, Some(&text)));
    }
    let key = format!("console-{}", uuid::Uuid::now_v7());
    dlq::retry(&state.pool, &key, &selection)
        .await
        .map(RetryDlqResult::from)
        .map_err(|e| {
            let text = message(&ApiError::in_body(e));
            confirm_page(session, action, what, fields, Some(&text))
        })
}

pub(crate) async fn retry_delivery(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
    form: Result<Form<Fields>, FormRejection>,
) -> Response {
    let (session, fields) = match actor(&state, &headers, &form) {
        Ok(ok) => ok,
        Err(refused) => return *refused,
    };
    let Ok(uuid) = id.parse::<uuid::Uuid>() else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let input = RetryDlq {
        delivery_ids: Some(vec![uuid.to_string()]),
        motivo: fields.get("motivo").cloned().unwrap_or_default(),
        ..Default::default()
    };
    let action = format!("/console/deliveries/{uuid}/retry");
    let what = format!("la entrega fallida {uuid}");
    match run_retry(&state, &session, &action, &what, &fields, input).await {
        Ok(done) => Redirect::to(&format!(
            "/console/deliveries/{uuid}?reintentadas={}",
            done.entregas
        ))
        .into_response(),
        Err(page) => page,
    }
}

pub(crate) async fn retry_group(
    State(state): State<AppState>,
    headers: HeaderMap,
    form: Result<Form<Fields>, FormRejection>,
) -> Response {
    let (session, fields) = match actor(&state, &headers, &form) {
        Ok(ok) => ok,
        Err(refused) => return *refused,
    };
    let sub = fields.get("suscripcion_id").cloned().unwrap_or_default();
    let error = fields
        .get("ultimo_error")
        .cloned()
        .filter(|e| !e.is_empty());
    let input = RetryDlq {
        suscripcion_id: Some(sub.clone()),
        ultimo_error: error.clone().map(|e| vec![e]),
        motivo: fields.get("motivo").cloned().unwrap_or_default(),
        ..Default::default()
    };
    let what = format!(
        "las fallidas de la suscripción {sub}{} (hasta {})",
        error.map(|e| format!(" con error {e}")).unwrap_or_default(),
        dlq::MAX_RETRY
    );
    match run_retry(
        &state,
        &session,
        "/console/dlq/retry",
        &what,
        &fields,
        input,
    )
    .await
    {
        Ok(done) => {
            let body = html! {
                (ok_box(&format!(
                    "Reintento pedido: {} entregas nuevas en {} replays.",
                    done.entregas,
                    done.replays.len()
                )))
                p { a href="/console/dlq" { "Volver a la DLQ" } }
            };
            page(
                "Reintento pedido",
                "/console/dlq",
                Some(&session.csrf),
                body,
            )
            .into_response()
        }
        Err(page) => page,
    }
}
