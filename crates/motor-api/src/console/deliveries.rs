//! The console's delivery search and one delivery's page (its attempts,
//! the other deliveries of its event — a retry's — and, for a failed one,
//! the retry form).

use std::collections::HashMap;

use axum::{
    extract::{Path, Query, State},
    http::{HeaderMap, StatusCode},
    response::{IntoResponse, Response},
};
use maud::{html, Markup};
use motor_domain::delivery::{DeliveryId, ErrorCode};
use motor_store::deliveries::read;

use super::{
    html::{
        csrf_field, error_box, link, ok_box, opt, opt_time, page, select, state_badge, time_at,
        time_text, Choice,
    },
    viewer,
};
use motor_app::deliveries as op;

use crate::{
    admin::operator::{OperatorDelivery, OperatorDeliveryDetail, OperatorDeliveryList},
    ApiError, AppState,
};

/// The delivery states a search can ask for.
const STATES: [&str; 4] = ["pendiente", "entregada", "fallida", "cancelada"];

/// The HTTP statuses the error-code list offers; another (`http_418`
/// from a DLQ link) is kept as an extra choice when it is searched.
const HTTP_STATUSES: [u16; 17] = [
    400, 401, 403, 404, 405, 408, 409, 410, 413, 415, 422, 429, 500, 501, 502, 503, 504,
];

/// Those whose retries can run out (`http_503_agotada`).
const RETRIED_STATUSES: [u16; 6] = [408, 429, 500, 502, 503, 504];

/// The free-text filters: name and label.
const TEXT_FILTERS: [(&str, &str); 4] = [
    ("app_id", "App"),
    ("suscripcion_id", "Suscripción"),
    ("instancia_id", "Instancia"),
    ("desde", "Desde (RFC 3339)"),
];

/// Every error code the list offers, by group: HTTP statuses, the named
/// codes, and both with their retries run out.
fn error_codes() -> [(&'static str, Vec<String>); 3] {
    let http = HTTP_STATUSES
        .iter()
        .map(|s| ErrorCode::Http(*s).to_string());
    let exhausted = RETRIED_STATUSES
        .iter()
        .map(|s| ErrorCode::Http(*s).to_string())
        .chain(ErrorCode::names().map(str::to_owned))
        .map(|code| format!("{code}_agotada"));
    [
        ("HTTP", http.collect()),
        (
            "Red y destino",
            ErrorCode::names().map(str::to_owned).collect(),
        ),
        ("Reintentos agotados", exhausted.collect()),
    ]
}

pub(super) fn search_form(params: &HashMap<String, String>) -> Markup {
    let get = |name: &str| params.get(name).map(String::as_str);
    let states = [(
        None,
        STATES
            .iter()
            .map(|s| Choice { value: s, label: s })
            .collect(),
    )];
    let codes = error_codes();
    let code_groups: Vec<_> = codes
        .iter()
        .map(|(label, codes)| {
            let choices = codes
                .iter()
                .map(|c| Choice { value: c, label: c })
                .collect();
            (Some(*label), choices)
        })
        .collect();
    html! {
        form method="get" action="/console/deliveries" id="buscar" {
            fieldset {
                label { "Estado " (select("estado", get("estado"), &states)) }
                " "
                @for (name, label) in TEXT_FILTERS {
                    label {
                        (label) " "
                        input name=(name) id={ "f-" (name) } value=(get(name).unwrap_or_default()) size="14";
                    }
                    " "
                }
                label { "Código de error " (select("ultimo_error", get("ultimo_error"), &code_groups)) }
                " "
                button id="buscar-btn" { "Buscar" }
            }
        }
    }
}

pub(super) fn results_table(list: &[OperatorDelivery]) -> Markup {
    html! {
        table id="entregas" {
            tr {
                th { "Creada" } th { "Entrega" } th { "Suscripción" } th { "Instancia" }
                th { "Seq" } th { "Tipo" } th { "Estado" } th class="num" { "Intentos" } th { "Error" }
            }
            @for d in list {
                tr {
                    td { (time_text(&d.creada_en)) }
                    td {
                        a class="entrega" href={ "/console/deliveries/" (d.delivery_id) } {
                            code { (d.delivery_id) }
                        }
                    }
                    td { (d.suscripcion) }
                    td { (d.instancia) }
                    td class="num" { (d.seq) }
                    td { (d.event_type) }
                    td { (state_badge(&d.estado)) }
                    td class="num" { (d.intentos) }
                    td { (opt(d.ultimo_error.as_deref())) }
                }
            }
        }
        @if list.is_empty() {
            p { "Ninguna entrega." }
        }
    }
}

pub(crate) async fn search(
    State(state): State<AppState>,
    headers: HeaderMap,
    Query(mut params): Query<HashMap<String, String>>,
) -> Response {
    let session = match viewer(&state, &headers) {
        Ok(s) => s,
        Err(r) => return *r,
    };
    params.retain(|_, v| !v.trim().is_empty());
    let form = search_form(&params);
    let (status, results) = match op::search(&state.pool, &params).await {
        Ok(list) => (StatusCode::OK, OperatorDeliveryList::from(list)),
        Err(e) => {
            // Bad input: the field named (the search's parameters are the
            // page's query), the form kept.
            let e = ApiError::in_query(e);
            let message = match &e {
                ApiError::Field(f) => format!("{}: {}", f.field, f.message),
                other => other.to_string(),
            };
            let body = html! { (form) (error_box(&message)) };
            let status = e.status_code();
            return (
                status,
                page("Entregas", "/console/deliveries", Some(&session.csrf), body),
            )
                .into_response();
        }
    };
    let next = results.siguiente_cursor.as_deref().map(|cursor| {
        let mut pairs: Vec<(&str, &str)> = params
            .iter()
            .filter(|(k, _)| k.as_str() != "cursor")
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        pairs.sort();
        pairs.push(("cursor", cursor));
        link("/console/deliveries", pairs)
    });
    let body = html! {
        (form)
        (results_table(&results.entregas))
        @if let Some(next) = next {
            p { a href=(next) { "Siguientes →" } }
        }
    };
    (
        status,
        page("Entregas", "/console/deliveries", Some(&session.csrf), body),
    )
        .into_response()
}

pub(crate) async fn detail(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
    Query(params): Query<HashMap<String, String>>,
) -> Response {
    let session = match viewer(&state, &headers) {
        Ok(s) => s,
        Err(r) => return *r,
    };
    let not_found = || {
        (
            StatusCode::NOT_FOUND,
            page(
                "Entrega",
                "/console/deliveries",
                Some(&session.csrf),
                error_box("No existe esa entrega."),
            ),
        )
            .into_response()
    };
    let Ok(uuid) = id.parse::<uuid::Uuid>() else {
        return not_found();
    };
    let detail = match op::detail(&state.pool, DeliveryId::from_uuid(uuid)).await {
        Ok(d) => OperatorDeliveryDetail::from(d),
        Err(_) => return not_found(),
    };
    let retried = params.get("reintentadas").map(String::as_str);
    let mut body = detail_body(&detail, retried, &session.csrf);
    if let Ok(list) = op::siblings(&state.pool, DeliveryId::from_uuid(uuid)).await {
        body = html! { (body) (siblings_table(&list)) };
    }
    page("Entrega", "/console/deliveries", Some(&session.csrf), body).into_response()
}

/// One delivery, its attempts and, when it failed, the retry form;
/// `retried` is how many new deliveries a retry just made.
pub(super) fn detail_body(
    detail: &OperatorDeliveryDetail,
    retried: Option<&str>,
    csrf: &str,
) -> Markup {
    let d = &detail.entrega;
    html! {
        @if let Some(n) = retried {
            (ok_box(&format!(
                "Reintento pedido: {n} entregas nuevas (abajo, en «Otras entregas de este evento»)."
            )))
        }
        table id="detalle" {
            tr { th { "Entrega" } td { code { (d.delivery_id) } } }
            tr { th { "Estado" } td id="estado" { (state_badge(&d.estado)) } }
            @if let Some(motivo) = &d.motivo {
                tr { th { "Motivo" } td id="motivo-cancelacion" { (motivo) } }
            }
            tr { th { "App" } td { code { (d.app_id) } } }
            tr { th { "Suscripción" } td { (d.suscripcion) " " code { (d.suscripcion_id) } } }
            tr { th { "Instancia" } td { (d.instancia) " " code { (d.instance_id) } } }
            tr { th { "Evento" } td { code { (d.event_id) } " seq " (d.seq) ", " (d.event_type) } }
            tr { th { "Carril" } td { (d.carril) } }
            tr { th { "Intentos" } td { (d.intentos) } }
            tr { th { "Último error" } td { (opt(d.ultimo_error.as_deref())) } }
            tr { th { "Próximo intento" } td { (opt_time(d.proximo_intento_en.as_deref())) } }
            tr { th { "Creada" } td { (time_text(&d.creada_en)) } }
            tr { th { "Entregada" } td { (opt_time(d.entregada_en.as_deref())) } }
        }
        h2 { "Intentos" }
        table id="intentos" {
            tr { th { "#" } th { "Inicio" } th class="num" { "ms" } th { "Status" } th { "Error" } }
            @for a in &detail.intentos_detalle {
                tr {
                    td { (a.numero) }
                    td { (time_text(&a.iniciado_en)) }
                    td class="num" { (a.duracion_ms) }
                    td { (opt(a.status.map(|s| s.to_string()).as_deref())) }
                    td { (opt(a.error.as_deref())) }
                }
            }
        }
        @if d.estado == "fallida" {
            h2 { "Reintentar" }
            form method="post" action={ "/console/deliveries/" (d.delivery_id) "/retry" } id="reintentar" {
                (csrf_field(csrf))
                label { "Motivo " input name="motivo" id="motivo" size="40" maxlength="300"; }
                " "
                button id="reintentar-btn" { "Reintentar…" }
            }
        }
    }
}

/// The other deliveries of the same event (a retry's among them).
fn siblings_table(list: &[read::Delivery]) -> Markup {
    html! {
        h2 { "Otras entregas de este evento" }
        table id="otras" {
            tr {
                th { "Entrega" } th { "Carril" } th { "Estado" } th class="num" { "Intentos" }
                th { "Creada" }
            }
            @for s in list {
                tr {
                    td { a href={ "/console/deliveries/" (s.id) } { code { (s.id) } } }
                    td { (s.lane.to_string()) }
                    td class="otra-estado" { (state_badge(s.state.as_str())) }
                    td class="num" { (s.attempts) }
                    td { (time_at(&s.created_at)) }
                }
            }
        }
        @if list.is_empty() {
            p { "Ninguna." }
        }
    }
}
