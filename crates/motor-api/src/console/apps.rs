//! The console's apps: each with its allowed destinations (the hosts its
//! subscriptions may point at), edited in place through
//! `motor_app::apps::update` — the same change as `PATCH
//! /v1/admin/apps/{id}`.

use std::collections::HashMap;

use axum::{
    extract::{rejection::FormRejection, Form, Path, Query, State},
    http::{HeaderMap, StatusCode},
    response::{IntoResponse, Redirect, Response},
};
use maud::{html, Markup};
use motor_app::apps::{self, AppChange};
use motor_domain::{operator::App, AppId};

use super::{
    actor,
    html::{csrf_field, error_box, ok_box, page},
    viewer, Fields,
};
use crate::{ApiError, AppState};

pub(super) fn apps_table(list: &[App], csrf: &str, typed: Option<(&str, &str)>) -> Markup {
    html! {
        table id="apps" {
            tr { th { "App" } th { "Política" } th { "Destinos permitidos" } }
            @for a in list {
                @let id = a.id.to_string();
                @let value = match typed {
                    Some((app, value)) if app == id => value.to_owned(),
                    _ => a.allowed_destinations.join(", "),
                };
                tr {
                    td { (a.name) br; code { (id) } }
                    td { (a.destination_policy.as_str()) }
                    td {
                        form method="post" action={ "/console/apps/" (id) "/destinations" }
                            class="destinos" {
                            (csrf_field(csrf))
                            input name="destinos" size="60" value=(value)
                                aria-label="Destinos permitidos, separados por comas";
                            " "
                            button { "Guardar" }
                        }
                    }
                }
            }
        }
        @if list.is_empty() { p { "Ninguna app." } }
    }
}

pub(crate) async fn list(
    State(state): State<AppState>,
    headers: HeaderMap,
    Query(params): Query<HashMap<String, String>>,
) -> Response {
    let session = match viewer(&state, &headers) {
        Ok(s) => s,
        Err(r) => return *r,
    };
    let apps = match apps::list(&state.pool).await {
        Ok(a) => a,
        Err(e) => return super::pages::internal(e),
    };
    let body = html! {
        @if params.get("hecho").is_some_and(|h| h == "guardada") {
            (ok_box("Destinos guardados."))
        }
        p {
            "Hosts (o IP, con puerto opcional) a los que pueden apuntar las suscripciones de cada \
             app, separados por comas."
        }
        (apps_table(&apps, &session.csrf, None))
    };
    page("Apps", "/console/apps", Some(&session.csrf), body).into_response()
}

pub(crate) async fn set_destinations(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
    form: Result<Form<Fields>, FormRejection>,
) -> Response {
    let (session, fields) = match actor(&state, &headers, &form) {
        Ok(ok) => ok,
        Err(refused) => return *refused,
    };
    let raw = fields.get("destinos").cloned().unwrap_or_default();
    let destinations: Vec<String> = raw
        .split([',', '\n'])
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect();
    let result = match id.parse::<uuid::Uuid>() {
        Ok(app) => apps::update(
            &state.pool,
            AppId::from_uuid(app),
            AppChange {
                allowed_destinations: Some(destinations),
                ..Default::default()
            },
        )
        .await
        .map_err(ApiError::in_body),
        Err(_) => Err(ApiError::NotFound("app")),
    };
    let e = match result {
        Ok(_) => return Redirect::to("/console/apps?hecho=guardada").into_response(),
        Err(e) => e,
    };
    let text = match &e {
        ApiError::Field(f) => format!("{}: {}", f.field, f.message),
        other => other.to_string(),
    };
    let list = apps::list(&state.pool).await.unwrap_or_default();
    let body = html! {
        (error_box(&text))
        p { "No se cambió nada." }
        (apps_table(&list, &session.csrf, Some((&id, &raw))))
    };
    let status = match e.status_code() {
        s if s.is_client_error() => s,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    };
    (
        status,
        page("Apps", "/console/apps", Some(&session.csrf), body),
    )
        .into_response()
}
