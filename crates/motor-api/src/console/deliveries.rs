//! The console's delivery search and one delivery's page (its attempts,
//! the other deliveries of its event — a retry's — and, for a failed one,
//! the retry form).

use std::{collections::HashMap, fmt::Write};

use axum::{
    extract::{Path, Query, State},
    http::{HeaderMap, StatusCode},
    response::{Html, IntoResponse, Response},
};
use motor_domain::delivery::DeliveryId;
use motor_store::deliveries::read;

use super::{
    html::{csrf_field, error_box, esc, ok_box, opt, page, q, state_badge},
    viewer,
};
use motor_app::deliveries as op;

use crate::{
    admin::operator::{OperatorDeliveryDetail, OperatorDeliveryList},
    ApiError, AppState,
};

const FILTERS: [(&str, &str); 6] = [
    ("estado", "Estado (pendiente, entregada, fallida)"),
    ("app_id", "App"),
    ("suscripcion_id", "Suscripción"),
    ("instancia_id", "Instancia"),
    ("ultimo_error", "Código de error"),
    ("desde", "Desde (RFC 3339)"),
];

fn form(params: &HashMap<String, String>) -> String {
    let mut out = String::from(
        "<form method=\"get\" action=\"/console/deliveries\" id=\"buscar\"><fieldset>",
    );
    for (name, label) in FILTERS {
        let _ = write!(
            out,
            "<label>{label} <input name=\"{name}\" id=\"f-{name}\" value=\"{}\" size=\"14\"></label> ",
            esc(params.get(name).map(String::as_str).unwrap_or_default())
        );
    }
    out.push_str("<button id=\"buscar-btn\">Buscar</button></fieldset></form>");
    out
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
    let mut body = form(&params);
    let (status, results) = match op::search(&state.pool, &params).await {
        Ok(list) => (StatusCode::OK, OperatorDeliveryList::from(list)),
        Err(e) => {
            let e = ApiError::from(e);
            // Bad input: the field named, the form kept.
            let message = match &e {
                ApiError::Field(f) => format!("{}: {}", f.field, f.message),
                other => other.to_string(),
            };
            body.push_str(&error_box(&message));
            let status = e.status_code();
            return (
                status,
                Html(page(
                    "Entregas",
                    "/console/deliveries",
                    Some(&session.csrf),
                    &body,
                )),
            )
                .into_response();
        }
    };
    body.push_str(
        "<table id=\"entregas\"><tr><th>Creada</th><th>Entrega</th><th>Suscripción</th><th>Instancia</th>\
         <th>Seq</th><th>Tipo</th><th>Estado</th><th class=\"num\">Intentos</th><th>Error</th></tr>",
    );
    for d in &results.entregas {
        let _ = write!(
            body,
            "<tr><td>{creada}</td><td><a class=\"entrega\" href=\"/console/deliveries/{id}\"><code>{id}</code></a></td>\
             <td>{sub}</td><td>{inst}</td><td class=\"num\">{seq}</td><td>{tipo}</td><td>{estado}</td>\
             <td class=\"num\">{n}</td><td>{error}</td></tr>",
            creada = esc(&d.creada_en),
            id = esc(&d.delivery_id),
            sub = esc(&d.suscripcion),
            inst = esc(&d.instancia),
            seq = d.seq,
            tipo = esc(&d.event_type),
            estado = state_badge(&d.estado),
            n = d.intentos,
            error = opt(d.ultimo_error.as_deref()),
        );
    }
    body.push_str("</table>");
    if results.entregas.is_empty() {
        body.push_str("<p>Ninguna entrega.</p>");
    }
    if let Some(cursor) = &results.siguiente_cursor {
        let mut next = String::from("/console/deliveries?");
        for (k, v) in params.iter().filter(|(k, _)| k.as_str() != "cursor") {
            let _ = write!(next, "{}={}&", q(k), q(v));
        }
        let _ = write!(next, "cursor={}", q(cursor));
        let _ = write!(body, "<p><a href=\"{}\">Siguientes →</a></p>", esc(&next));
    }
    (
        status,
        Html(page(
            "Entregas",
            "/console/deliveries",
            Some(&session.csrf),
            &body,
        )),
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
            Html(page(
                "Entrega",
                "/console/deliveries",
                Some(&session.csrf),
                &error_box("No existe esa entrega."),
            )),
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
    let d = &detail.entrega;
    let mut body = String::new();
    if let Some(n) = params.get("reintentadas") {
        body.push_str(&ok_box(&format!(
            "Reintento pedido: {n} entregas nuevas (abajo, en «Otras entregas de este evento»)."
        )));
    }
    let _ = write!(
        body,
        "<table id=\"detalle\">\
         <tr><th>Entrega</th><td><code>{id}</code></td></tr>\
         <tr><th>Estado</th><td id=\"estado\">{estado}</td></tr>\
         <tr><th>App</th><td><code>{app}</code></td></tr>\
         <tr><th>Suscripción</th><td>{sub} <code>{sub_id}</code></td></tr>\
         <tr><th>Instancia</th><td>{inst} <code>{inst_id}</code></td></tr>\
         <tr><th>Evento</th><td><code>{event}</code> seq {seq}, {tipo}</td></tr>\
         <tr><th>Carril</th><td>{carril}</td></tr>\
         <tr><th>Intentos</th><td>{n}</td></tr>\
         <tr><th>Último error</th><td>{error}</td></tr>\
         <tr><th>Próximo intento</th><td>{proximo}</td></tr>\
         <tr><th>Creada</th><td>{creada}</td></tr>\
         <tr><th>Entregada</th><td>{entregada}</td></tr></table>",
        id = esc(&d.delivery_id),
        estado = state_badge(&d.estado),
        app = esc(&d.app_id),
        sub = esc(&d.suscripcion),
        sub_id = esc(&d.suscripcion_id),
        inst = esc(&d.instancia),
        inst_id = esc(&d.instance_id),
        event = esc(&d.event_id),
        seq = d.seq,
        tipo = esc(&d.event_type),
        carril = esc(&d.carril),
        n = d.intentos,
        error = opt(d.ultimo_error.as_deref()),
        proximo = opt(d.proximo_intento_en.as_deref()),
        creada = esc(&d.creada_en),
        entregada = opt(d.entregada_en.as_deref()),
    );
    body.push_str(
        "<h2>Intentos</h2><table id=\"intentos\"><tr><th>#</th><th>Inicio</th>\
         <th class=\"num\">ms</th><th>Status</th><th>Error</th></tr>",
    );
    for a in &detail.intentos_detalle {
        let _ = write!(
            body,
            "<tr><td>{}</td><td>{}</td><td class=\"num\">{}</td><td>{}</td><td>{}</td></tr>",
            a.numero,
            esc(&a.iniciado_en),
            a.duracion_ms,
            opt(a.status.map(|s| s.to_string()).as_deref()),
            opt(a.error.as_deref()),
        );
    }
    body.push_str("</table>");
    if d.estado == "fallida" {
        let _ = write!(
            body,
            "<h2>Reintentar</h2><form method=\"post\" action=\"/console/deliveries/{id}/retry\" id=\"reintentar\">{csrf}\
             <label>Motivo <input name=\"motivo\" id=\"motivo\" size=\"40\" maxlength=\"300\"></label> \
             <button id=\"reintentar-btn\">Reintentar…</button></form>",
            id = esc(&d.delivery_id),
            csrf = csrf_field(&session.csrf),
        );
    }
    let siblings = read::get(&state.pool, None, DeliveryId::from_uuid(uuid))
        .await
        .ok()
        .flatten();
    if let Some(of) = siblings {
        if let Ok(list) = read::siblings(&state.pool, &of).await {
            body.push_str(
                "<h2>Otras entregas de este evento</h2><table id=\"otras\"><tr><th>Entrega</th>\
                 <th>Carril</th><th>Estado</th><th class=\"num\">Intentos</th><th>Creada</th></tr>",
            );
            for s in &list {
                let _ = write!(
                    body,
                    "<tr><td><a href=\"/console/deliveries/{id}\"><code>{id}</code></a></td><td>{carril}</td>\
                     <td class=\"otra-estado\">{estado}</td><td class=\"num\">{n}</td><td>{creada}</td></tr>",
                    id = s.id,
                    carril = esc(&s.lane.to_string()),
                    estado = state_badge(s.state.as_str()),
                    n = s.attempts,
                    creada = esc(&motor_domain::time::format(&s.created_at)),
                );
            }
            body.push_str("</table>");
            if list.is_empty() {
                body.push_str("<p>Ninguna.</p>");
            }
        }
    }
    Html(page(
        "Entrega",
        "/console/deliveries",
        Some(&session.csrf),
        &body,
    ))
    .into_response()
}
