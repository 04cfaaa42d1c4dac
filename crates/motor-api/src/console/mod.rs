//! The web console at `/console` (issue 15): what an operator needs to
//! answer "is anything stuck, who is failing, what is in the DLQ" and to
//! act, without SQL. Server-rendered HTML from maud templates, which
//! escape every value (`html`), inline SVG charts (`chart`), a few lines of
//! JavaScript (confirmation prompts, the overview's refresh).
//!
//! It also manages what it shows (issue 36): subscriptions are created,
//! edited, paused, rotated and tested (`manage`), each has a page with its
//! numbers and a delivery's attempts (`subscription`), and an app's
//! allowed destinations are edited (`apps`).
//!
//! Access: the admin token, typed once on `/console/login`, becomes a
//! signed session cookie (HttpOnly, SameSite=Strict; `session`); every action is a
//! POST that carries the session's CSRF token, and one without a valid
//! session or token is refused (403) with nothing changed. Without
//! `MOTOR_ADMIN_TOKEN` the console is closed. No page shows a secret, a
//! credential or an API token — but the answer to creating a subscription
//! or rotating its secret, which shows the new secret once, as the API
//! does; a subscription's destination shows only its scheme and host.

mod actions;
mod apps;
mod chart;
mod deliveries;
mod html;
mod manage;
mod pages;
mod session;
mod subscription;
#[cfg(test)]
mod tests;

use std::collections::HashMap;

use axum::{
    extract::{rejection::FormRejection, Form, State},
    http::{HeaderMap, StatusCode},
    response::{IntoResponse, Redirect, Response},
    routing::{get, post},
    Router,
};
use maud::{html, Markup};
use motor_domain::apikey::constant_time_eq;

use self::{html::page, session::Session};
use crate::AppState;

/// A form's fields.
pub(crate) type Fields = HashMap<String, String>;

fn now() -> i64 {
    chrono::Utc::now().timestamp()
}

/// The session of a page request, or the answer that sends the browser to
/// the login page.
pub(crate) fn viewer(state: &AppState, headers: &HeaderMap) -> Result<Session, Refusal> {
    let Some(token) = state.admin_token.as_deref() else {
        return Err(Box::new(closed()));
    };
    Session::from_headers(token, headers, now())
        .ok_or_else(|| Box::new(Redirect::to("/console/login").into_response()))
}

/// A page to answer instead (boxed: a `Response` is large).
pub(crate) type Refusal = Box<Response>;

/// The session of an action: a valid session cookie and the form's CSRF
/// token, or a 403 (nothing is changed).
pub(crate) fn actor(
    state: &AppState,
    headers: &HeaderMap,
    form: &Result<Form<Fields>, FormRejection>,
) -> Result<(Session, Fields), Refusal> {
    let Some(token) = state.admin_token.as_deref() else {
        return Err(Box::new(closed()));
    };
    let refused = |why: &str| -> Refusal {
        let body = html! {
            (html::error_box(why))
            p { a href="/console/login" { "Entrar" } }
        };
        Box::new(
            (
                StatusCode::FORBIDDEN,
                page("Acción rechazada", "", None, body),
            )
                .into_response(),
        )
    };
    let Some(session) = Session::from_headers(token, headers, now()) else {
        return Err(refused(
            "Sin sesión válida: entra de nuevo. No se cambió nada.",
        ));
    };
    let fields = match form {
        Ok(Form(fields)) => fields.clone(),
        Err(_) => return Err(refused("Formulario ilegible. No se cambió nada.")),
    };
    if !session.csrf_matches(fields.get("csrf").map(String::as_str)) {
        return Err(refused(
            "Token CSRF ausente o no válido. No se cambió nada.",
        ));
    }
    Ok((session, fields))
}

fn closed() -> Response {
    (
        StatusCode::FORBIDDEN,
        page(
            "Consola cerrada",
            "",
            None,
            html! {
                p { "La consola está cerrada: define " code { "MOTOR_ADMIN_TOKEN" } " para abrirla." }
            },
        ),
    )
        .into_response()
}

fn login_page(error: Option<&str>) -> Markup {
    let body = html! {
        @if let Some(error) = error { (html::error_box(error)) }
        form method="post" action="/console/login" {
            label {
                "Token de operador (" code { "MOTOR_ADMIN_TOKEN" } ") "
                input type="password" name="token" id="token" autocomplete="off" required;
            }
            " "
            button id="entrar" { "Entrar" }
        }
    };
    page("Entrar", "", None, body)
}

async fn get_login(State(state): State<AppState>) -> Response {
    if state.admin_token.is_none() {
        return closed();
    }
    login_page(None).into_response()
}

async fn post_login(
    State(state): State<AppState>,
    form: Result<Form<Fields>, FormRejection>,
) -> Response {
    let Some(expected) = state.admin_token.as_deref() else {
        return closed();
    };
    let token = form
        .ok()
        .and_then(|Form(f)| f.get("token").cloned())
        .unwrap_or_default();
    if token.is_empty() || !constant_time_eq(token.as_bytes(), expected.as_bytes()) {
        return (
            StatusCode::UNAUTHORIZED,
            login_page(Some("token: no es el token de operador")),
        )
            .into_response();
    }
    let session = Session::issue(expected, now());
    (session.store(expected), Redirect::to("/console")).into_response()
}

async fn post_logout(
    State(state): State<AppState>,
    headers: HeaderMap,
    form: Result<Form<Fields>, FormRejection>,
) -> Response {
    if let Err(refused) = actor(&state, &headers, &form) {
        return *refused;
    }
    let token = state.admin_token.as_deref().unwrap_or_default();
    (
        Session::clear(token, &headers),
        Redirect::to("/console/login"),
    )
        .into_response()
}

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/console", get(pages::overview))
        // A trailing slash is the console too (it answered a JSON 404).
        .route("/console/", get(|| async { Redirect::to("/console") }))
        .route("/console/login", get(get_login).post(post_login))
        .route("/console/logout", post(post_logout))
        .route("/console/subscriptions", get(pages::subscriptions))
        .route(
            "/console/subscriptions/new",
            get(manage::get_new).post(manage::post_new),
        )
        .route("/console/subscriptions/{id}", get(subscription::show))
        .route(
            "/console/subscriptions/{id}/{action}",
            post(manage::subscription_action),
        )
        .route("/console/apps", get(apps::list))
        .route(
            "/console/apps/{id}/destinations",
            post(apps::set_destinations),
        )
        .route("/console/deliveries", get(deliveries::search))
        .route("/console/deliveries/{id}", get(deliveries::detail))
        .route(
            "/console/deliveries/{id}/retry",
            post(actions::retry_delivery),
        )
        .route("/console/dlq", get(pages::dlq))
        .route("/console/dlq/retry", post(actions::retry_group))
        .route("/console/alerts", get(pages::alerts))
        .route("/console/alerts/{id}/close", post(actions::close_alert))
}
