//! The console's subscription management (issue 36, item 3): a new one
//! from a form, and on one — edit, pause or reactivate, rotate the
//! secret, send the test. Every action is a POST with the session's CSRF
//! token (`super::actor`) and calls the application layer
//! (`motor_app::subscriptions`) as the operator acting for the
//! subscription's app, so the console can do exactly what the API allows.
//! A new secret (create, rotate) is shown once, on the answer to that
//! POST, as the API shows it once; no other page shows it. Bad input
//! answers the form again with the field named, its values kept, nothing
//! changed.

use axum::{
    extract::{rejection::FormRejection, Form, Path, State},
    http::{HeaderMap, StatusCode},
    response::{IntoResponse, Redirect, Response},
};
use maud::{html, Markup};
use motor_app::{
    apps,
    subscriptions::{self, operator, probe, NewSubscriptionInput, SubscriptionChange, WithSecret},
    Access,
};
use motor_domain::subscription::{Subscription, SubscriptionId};

use super::{
    actor,
    html::{csrf_field, error_box, ok_box, page, select, Choice},
    session::Session,
    viewer, Fields,
};
use crate::{ApiError, AppState};

const SIGNATURES: [&str; 3] = ["mw-v1", "t-v1", "standard-webhooks"];

fn message(e: &ApiError) -> String {
    match e {
        ApiError::Field(f) => format!("{}: {}", f.field, f.message),
        other => other.to_string(),
    }
}

/// A comma (or line) separated list, blanks dropped.
fn list(raw: Option<&String>) -> Vec<String> {
    raw.map(|r| {
        r.split([',', '\n'])
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect()
    })
    .unwrap_or_default()
}

fn field<'a>(fields: &'a Fields, name: &str) -> Option<&'a str> {
    fields.get(name).map(String::as_str)
}

fn signature_select(current: Option<&str>) -> Markup {
    let choices = SIGNATURES
        .iter()
        .map(|s| Choice { value: s, label: s })
        .collect();
    select("firma", current, &[(None, choices)])
}

fn ordered_select(current: Option<&str>) -> Markup {
    let choices = vec![
        Choice {
            value: "si",
            label: "sí (en orden por instancia)",
        },
        Choice {
            value: "no",
            label: "no",
        },
    ];
    select("ordenada", current, &[(None, choices)])
}

fn ordered(fields: &Fields) -> Option<bool> {
    match field(fields, "ordenada") {
        Some("si") => Some(true),
        Some("no") => Some(false),
        _ => None,
    }
}

fn text_input(name: &str, label: &str, fields: &Fields, hint: &str) -> Markup {
    html! {
        p {
            label {
                (label) " "
                input name=(name) id={ "f-" (name) } size="50" value=(field(fields, name).unwrap_or_default()) placeholder=(hint);
            }
        }
    }
}

/// The form of a new subscription; `fields` are the values to keep.
pub(super) fn new_form(apps: &[AppChoice], csrf: &str, fields: &Fields) -> Markup {
    let choices = apps
        .iter()
        .map(|a| Choice {
            value: a.id_text.as_str(),
            label: a.name.as_str(),
        })
        .collect();
    html! {
        form method="post" action="/console/subscriptions/new" id="nueva" {
            (csrf_field(csrf))
            fieldset {
                p { label { "App " (select("app_id", field(fields, "app_id"), &[(None, choices)])) } }
                (text_input("nombre", "Nombre", fields, ""))
                (text_input("url", "URL", fields, "https://…"))
                (text_input("tipos", "Tipos (separados por comas; vacío: todos)", fields, ""))
                (text_input("instancias", "Instancias (ids, separados por comas; vacío: todas)", fields, ""))
                p { label { "Firma " (signature_select(field(fields, "firma"))) } }
                p { label { "Ordenada " (ordered_select(field(fields, "ordenada"))) } }
                button id="crear-btn" { "Crear" }
            }
        }
    }
}

/// The apps for the create form, each with its id as text.
async fn app_choices(state: &AppState) -> Result<Vec<AppChoice>, ApiError> {
    Ok(apps::list(&state.pool)
        .await?
        .into_iter()
        .map(|a| AppChoice {
            id_text: a.id.to_string(),
            name: a.name,
        })
        .collect())
}

/// An app as the form's select shows it.
pub(super) struct AppChoice {
    pub id_text: String,
    pub name: String,
}

fn new_page(
    session: &Session,
    apps: &[AppChoice],
    fields: &Fields,
    error: Option<&str>,
) -> Response {
    let status = if error.is_some() {
        StatusCode::UNPROCESSABLE_ENTITY
    } else {
        StatusCode::OK
    };
    let body = html! {
        @if let Some(e) = error { (error_box(e)) p { "No se creó nada." } }
        (new_form(apps, &session.csrf, fields))
    };
    (
        status,
        page(
            "Nueva suscripción",
            "/console/subscriptions",
            Some(&session.csrf),
            body,
        ),
    )
        .into_response()
}

pub(crate) async fn get_new(State(state): State<AppState>, headers: HeaderMap) -> Response {
    let session = match viewer(&state, &headers) {
        Ok(s) => s,
        Err(r) => return *r,
    };
    match app_choices(&state).await {
        Ok(apps) => new_page(&session, &apps, &Fields::new(), None),
        Err(e) => super::pages::internal(e),
    }
}

pub(crate) async fn post_new(
    State(state): State<AppState>,
    headers: HeaderMap,
    form: Result<Form<Fields>, FormRejection>,
) -> Response {
    let (session, fields) = match actor(&state, &headers, &form) {
        Ok(ok) => ok,
        Err(refused) => return *refused,
    };
    let apps = match app_choices(&state).await {
        Ok(a) => a,
        Err(e) => return super::pages::internal(e),
    };
    let created = async {
        let app = field(&fields, "app_id")
            .and_then(|a| a.parse::<uuid::Uuid>().ok())
            .ok_or_else(|| {
                ApiError::Field(motor_domain::FieldError::invalid("app_id", "choose an app"))
            })?;
        let access = Access::operator(&state.pool, motor_domain::AppId::from_uuid(app)).await?;
        let input = NewSubscriptionInput {
            name: field(&fields, "nombre").unwrap_or_default().to_owned(),
            url: field(&fields, "url").unwrap_or_default().trim().to_owned(),
            instances: list(fields.get("instancias")),
            types: list(fields.get("tipos")),
            ordered: ordered(&fields),
            signature: field(&fields, "firma")
                .filter(|f| !f.is_empty())
                .map(str::to_owned),
            ..Default::default()
        };
        subscriptions::create(&state.pool, &state.sealing, &access, input)
            .await
            .map_err(ApiError::in_body)
    }
    .await;
    match created {
        Ok(done) => secret_page(&session, "Suscripción creada", &done),
        Err(e) => new_page(&session, &apps, &fields, Some(&message(&e))),
    }
}

/// The answer to a create or a rotation: the secret, once.
fn secret_page(session: &Session, title: &str, done: &WithSecret) -> Response {
    let id = done.subscription.id;
    let body = html! {
        (ok_box("Guarda el secreto ahora: no se vuelve a mostrar."))
        table id="secreto-nuevo" {
            tr { th { "Suscripción" } td { code id="sub-id" { (id) } } }
            tr { th { "Clave (key id)" } td { code id="key-id" { (done.secret.key_id.as_str()) } } }
            tr { th { "Secreto" } td { code id="secreto" { (done.secret.secret.expose()) } } }
        }
        p { a id="ver" href={ "/console/subscriptions/" (id) } { "Ver la suscripción" } }
    };
    page(title, "/console/subscriptions", Some(&session.csrf), body).into_response()
}

/// The edit form of `sub`; `fields` are values typed that failed (kept).
/// The URL field starts empty (its path may hold a credential and is
/// never shown): left empty, the URL stays.
pub(super) fn edit_form(sub: &Subscription, csrf: &str, fields: &Fields) -> Markup {
    let mut values = Fields::new();
    values.insert("nombre".into(), sub.name.clone());
    values.insert("tipos".into(), sub.event_types.join(", "));
    values.extend(fields.iter().map(|(k, v)| (k.clone(), v.clone())));
    let firma = field(fields, "firma").unwrap_or(sub.signature.as_str());
    let ordenada = field(fields, "ordenada").unwrap_or(if sub.ordering.is_ordered() {
        "si"
    } else {
        "no"
    });
    html! {
        form method="post" action={ "/console/subscriptions/" (sub.id) "/edit" } id="editar" {
            (csrf_field(csrf))
            input type="hidden" name="version" value=(sub.version);
            fieldset {
                (text_input("nombre", "Nombre", &values, ""))
                (text_input("url", "URL nueva (vacío: la misma)", &Fields::new(), "https://…"))
                (text_input("tipos", "Tipos (separados por comas; vacío: todos)", &values, ""))
                p { label { "Firma " (signature_select(Some(firma))) } }
                p { label { "Ordenada " (ordered_select(Some(ordenada))) } }
                button id="guardar-btn" { "Guardar" }
            }
        }
    }
}

/// `POST /console/subscriptions/{id}/{action}`: `pause`, `reactivate`,
/// `edit`, `rotate`, `test`.
pub(crate) async fn subscription_action(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path((id, action)): Path<(String, String)>,
    form: Result<Form<Fields>, FormRejection>,
) -> Response {
    let (session, fields) = match actor(&state, &headers, &form) {
        Ok(ok) => ok,
        Err(refused) => return *refused,
    };
    if !["pause", "reactivate", "edit", "rotate", "test"].contains(&action.as_str()) {
        return StatusCode::NOT_FOUND.into_response();
    }
    let Ok(uuid) = id.parse::<uuid::Uuid>() else {
        return failed(&session, &ApiError::NotFound("subscription"), None);
    };
    let id = SubscriptionId::from_uuid(uuid);
    let back = format!("/console/subscriptions/{id}");
    let access = match operator::access(&state.pool, id).await {
        Ok(a) => a,
        Err(e) => return failed(&session, &e.into(), None),
    };
    let from_page = field(&fields, "volver") == Some("pagina");
    let result = match action.as_str() {
        "pause" | "reactivate" => {
            let estado = if action == "pause" {
                "pausada"
            } else {
                "activa"
            };
            subscriptions::set_state(&state.pool, &state.sealing, id, estado)
                .await
                .map(|_| {
                    if from_page {
                        Redirect::to(&format!("{back}?hecho={estado}")).into_response()
                    } else {
                        Redirect::to("/console/subscriptions").into_response()
                    }
                })
        }
        "edit" => {
            let change = change_of(&fields);
            match change {
                Ok(change) => {
                    match subscriptions::update(&state.pool, &state.sealing, &access, id, change)
                        .await
                    {
                        Ok(_) => {
                            Ok(Redirect::to(&format!("{back}?hecho=guardada")).into_response())
                        }
                        Err(e) => {
                            return edit_failed(
                                &state,
                                &session,
                                id,
                                &fields,
                                &ApiError::in_body(e),
                            )
                            .await
                        }
                    }
                }
                Err(e) => return edit_failed(&state, &session, id, &fields, &e).await,
            }
        }
        "rotate" => subscriptions::rotate_secret(&state.pool, &state.sealing, &access, id)
            .await
            .map(|done| secret_page(&session, "Secreto rotado", &done)),
        _ => probe::test(
            &state.pool,
            &state.sealing,
            &state.destinations,
            &access,
            id,
        )
        .await
        .map(|report| {
            let text = match (&report.ok, report.status, &report.error) {
                (true, status, _) => format!(
                    "Prueba entregada: status {} en {} ms.",
                    status.map_or("—".to_owned(), |s| s.to_string()),
                    report.duration.as_millis()
                ),
                (false, status, error) => format!(
                    "Prueba no entregada: {} (status {}) en {} ms.",
                    error.as_deref().unwrap_or("error"),
                    status.map_or("—".to_owned(), |s| s.to_string()),
                    report.duration.as_millis()
                ),
            };
            let shown = if report.ok {
                ok_box(&text)
            } else {
                error_box(&text)
            };
            let body = html! {
                div id="prueba" { (shown) }
                p { a id="volver" href=(back) { "Volver a la suscripción" } }
            };
            page(
                "Prueba",
                "/console/subscriptions",
                Some(&session.csrf),
                body,
            )
            .into_response()
        }),
    };
    match result {
        Ok(r) => r,
        // A reactivation checks the stored url again: `body.url`, as the API.
        Err(e) => failed(&session, &ApiError::in_body(e), Some(&back)),
    }
}

/// The change an edit form asks for: what differs from nothing typed.
fn change_of(fields: &Fields) -> Result<SubscriptionChange, ApiError> {
    let version = field(fields, "version")
        .map(|v| {
            v.parse::<i64>().map_err(|_| {
                ApiError::Field(motor_domain::FieldError::invalid(
                    "version",
                    "must be a number",
                ))
            })
        })
        .transpose()?;
    let url = field(fields, "url")
        .map(str::trim)
        .filter(|u| !u.is_empty());
    Ok(SubscriptionChange {
        name: field(fields, "nombre").map(str::to_owned),
        url: url.map(str::to_owned),
        types: fields.get("tipos").map(|_| list(fields.get("tipos"))),
        ordered: ordered(fields),
        signature: field(fields, "firma")
            .filter(|f| !f.is_empty())
            .map(str::to_owned),
        expected_version: version,
        ..Default::default()
    })
}

/// The subscription page's edit form again, with the error and the
/// values typed.
async fn edit_failed(
    state: &AppState,
    session: &Session,
    id: SubscriptionId,
    fields: &Fields,
    e: &ApiError,
) -> Response {
    let Ok(sub) = operator::get(&state.pool, id).await else {
        return failed(session, e, None);
    };
    let body = html! {
        (error_box(&message(e)))
        p { "No se cambió nada. " a href={ "/console/subscriptions/" (id) } { "Volver" } }
        (edit_form(&sub, &session.csrf, fields))
    };
    (
        e.status_code(),
        page(
            &sub.name,
            "/console/subscriptions",
            Some(&session.csrf),
            body,
        ),
    )
        .into_response()
}

fn failed(session: &Session, e: &ApiError, back: Option<&str>) -> Response {
    let back = back.unwrap_or("/console/subscriptions");
    let body = html! {
        (error_box(&message(e)))
        p { "No se cambió nada. " a href=(back) { "Volver" } }
    };
    (
        e.status_code(),
        page(
            "Suscripciones",
            "/console/subscriptions",
            Some(&session.csrf),
            body,
        ),
    )
        .into_response()
}
