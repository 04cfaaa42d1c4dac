//! One subscription's page: what it is (never its secret, its URL's path
//! or its credentials), its numbers over the last 24 hours (success rate,
//! latency percentiles, the last errors), a timeline of one delivery's
//! attempts (status, duration, the signing keys that signed it), and the
//! forms that manage it (`manage`).

use std::collections::HashMap;

use axum::{
    extract::{Path, Query, State},
    http::{HeaderMap, StatusCode},
    response::{IntoResponse, Response},
};
use maud::{html, Markup};
use motor_app::{
    deliveries::{self as op, DeliveryDetail},
    subscriptions::operator,
};
use motor_domain::{
    delivery::DeliveryId,
    subscription::{Subscription, SubscriptionId},
};
use motor_store::subscription_stats::{Percentiles, SubscriptionStats};

use super::{
    html::{csrf_field, error_box, ok_box, opt, page, state_badge, time_at},
    manage::edit_form,
    pages::destination,
    viewer,
};
use crate::AppState;

/// The page's notices, from the `?hecho=` an action redirects with.
fn notice(done: Option<&str>) -> Option<&'static str> {
    Some(match done? {
        "guardada" => "Cambios guardados.",
        "pausada" => "Suscripción pausada: sus entregas esperan hasta que se reactive.",
        "activa" => "Suscripción reactivada.",
        _ => return None,
    })
}

pub(crate) async fn show(
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
                "Suscripción",
                "/console/subscriptions",
                Some(&session.csrf),
                error_box("No existe esa suscripción."),
            ),
        )
            .into_response()
    };
    let Ok(uuid) = id.parse::<uuid::Uuid>() else {
        return not_found();
    };
    let Ok(sub) = operator::get(&state.pool, SubscriptionId::from_uuid(uuid)).await else {
        return not_found();
    };
    let stats = match operator::stats(&state.pool, &sub).await {
        Ok(s) => s,
        Err(e) => return super::pages::internal(e),
    };
    // The timeline: the delivery asked for (of this subscription), else
    // the newest one tried.
    let asked = params
        .get("entrega")
        .and_then(|e| e.parse::<uuid::Uuid>().ok())
        .map(DeliveryId::from_uuid);
    let mut timeline = None;
    if let Some(d) = asked.or(stats.latest_tried) {
        if let Ok(detail) = op::detail(&state.pool, d).await {
            if detail.delivery.subscription_id == sub.id {
                timeline = Some(detail);
            }
        }
    }
    let body = html! {
        @if let Some(text) = notice(params.get("hecho").map(String::as_str)) { (ok_box(text)) }
        (summary(&sub))
        (actions(&sub, &session.csrf))
        (numbers(&stats))
        (errors_table(&stats))
        (timeline_table(timeline.as_ref()))
        h2 { "Editar" }
        (edit_form(&sub, &session.csrf, &HashMap::new()))
    };
    page(
        &sub.name,
        "/console/subscriptions",
        Some(&session.csrf),
        body,
    )
    .into_response()
}

/// What the subscription is.
pub(super) fn summary(sub: &Subscription) -> Markup {
    let list = |v: &[String], all: &str| {
        if v.is_empty() {
            all.to_owned()
        } else {
            v.join(", ")
        }
    };
    let instances: Vec<String> = sub.instances.iter().map(ToString::to_string).collect();
    html! {
        table id="datos" {
            tr { th { "Suscripción" } td { code { (sub.id) } } }
            tr { th { "App" } td { code { (sub.app_id) } } }
            tr { th { "Destino" } td id="destino" { (destination(&sub.url)) } }
            tr { th { "Estado" } td id="estado" { (state_badge(sub.state.as_str())) } }
            tr { th { "Motivo" } td { (opt(sub.reason.map(|r| r.as_str()))) } }
            tr { th { "Firma" } td { (sub.signature.as_str()) } }
            tr { th { "Ordenada" } td { @if sub.ordering.is_ordered() { "sí" } @else { "no" } } }
            tr { th { "Tipos" } td id="tipos" { (list(&sub.event_types, "(todos)")) } }
            tr { th { "Instancias" } td { (list(&instances, "(todas)")) } }
            tr { th { "Versión" } td { (sub.version) } }
            tr {
                th { "Claves de firma" }
                td id="claves" {
                    @for k in &sub.keys {
                        code class="clave" { (k.key_id.as_str()) }
                        " desde " (time_at(&k.created_at))
                        @if let Some(until) = &k.expires_at { ", firma hasta " (time_at(until)) }
                        br;
                    }
                }
            }
        }
    }
}

/// Pause or reactivate, rotate, test.
fn actions(sub: &Subscription, csrf: &str) -> Markup {
    let id = sub.id.to_string();
    let (action, label) = if sub.state.as_str() == "activa" {
        ("pause", "Pausar")
    } else {
        ("reactivate", "Reactivar")
    };
    let form = |action: &str, label: &str, question: &str, button: &str| {
        html! {
            form class="inline" method="post"
                action={ "/console/subscriptions/" (id) "/" (action) }
                data-confirm=(question) {
                (csrf_field(csrf))
                input type="hidden" name="volver" value="pagina";
                button id=(button) { (label) }
            }
            " "
        }
    };
    html! {
        p id="acciones" {
            (form(action, label, &format!("¿{label} {}?", sub.name), "estado-btn"))
            (form("rotate", "Rotar el secreto", "¿Rotar el secreto? El anterior sigue firmando durante la ventana de rotación.", "rotar-btn"))
            form class="inline" method="post" action={ "/console/subscriptions/" (id) "/test" } {
                (csrf_field(csrf))
                button id="probar-btn" { "Enviar una prueba" }
            }
        }
    }
}

fn ms(v: Option<f64>) -> String {
    v.map_or_else(|| "—".to_owned(), |v| format!("{v:.0} ms"))
}

fn percentiles(p: &Percentiles) -> String {
    format!("{} / {} / {}", ms(p.p50), ms(p.p90), ms(p.p99))
}

/// The success rate: delivered out of finished, or a dash with none.
pub(super) fn success_rate(s: &SubscriptionStats) -> String {
    let finished = s.delivered + s.failed;
    if finished == 0 {
        return "—".to_owned();
    }
    let rate = s.delivered as f64 * 100.0 / finished as f64;
    format!("{rate:.1} %")
}

fn numbers(s: &SubscriptionStats) -> Markup {
    let cards = [
        ("tasa", "Tasa de éxito", success_rate(s)),
        ("n-entregadas", "Entregadas", s.delivered.to_string()),
        ("n-fallidas", "Fallidas", s.failed.to_string()),
        ("n-pendientes", "Pendientes", s.pending.to_string()),
        (
            "latencia",
            "Latencia, confirmación → entregada (p50 / p90 / p99)",
            percentiles(&s.latency_ms),
        ),
        (
            "intento",
            "Duración de un intento (p50 / p90 / p99)",
            percentiles(&s.attempt_ms),
        ),
    ];
    html! {
        h2 { "Últimas 24 horas" }
        div class="cards" {
            @for (id, label, value) in &cards {
                div class="card" { (label) b id=(id) { (value) } }
            }
        }
    }
}

fn errors_table(s: &SubscriptionStats) -> Markup {
    html! {
        h2 { "Últimos errores" }
        @if s.last_errors.is_empty() {
            p id="errores" { "Ninguno." }
        } @else {
            table id="errores" {
                tr { th { "Intento" } th { "Entrega" } th { "Status" } th { "Error" } }
                @for e in &s.last_errors {
                    tr {
                        td { (time_at(&e.started_at)) }
                        td { a href={ "/console/deliveries/" (e.delivery_id) } { code { (e.delivery_id) } } }
                        td { (opt(e.status.map(|s| s.to_string()).as_deref())) }
                        td { (e.error) }
                    }
                }
            }
        }
    }
}

/// One delivery's attempts in time order, each with its offset from the
/// first.
fn timeline_table(detail: Option<&DeliveryDetail>) -> Markup {
    let Some(detail) = detail else {
        return html! { h2 { "Intentos de una entrega" } p { "Ninguna entrega intentada aún." } };
    };
    let d = &detail.delivery;
    let first = detail.attempts.first().map(|a| a.started_at);
    html! {
        h2 { "Intentos de una entrega" }
        p {
            "Entrega " a href={ "/console/deliveries/" (d.id) } { code id="linea-entrega" { (d.id) } }
            " (seq " (d.seq) ", " (d.event_type) "): " (state_badge(d.state.as_str()))
        }
        table id="linea" {
            tr {
                th { "#" } th { "Inicio" } th class="num" { "Desde el primero" }
                th class="num" { "Duración" } th { "Status" } th { "Error" } th { "Claves de firma" }
            }
            @for a in &detail.attempts {
                @let offset = first.map_or(0, |f| (a.started_at - f).num_milliseconds());
                tr {
                    td { (a.number) }
                    td { (time_at(&a.started_at)) }
                    td class="num" { "+" (format!("{:.1}", offset as f64 / 1000.0)) " s" }
                    td class="num" { (a.duration_ms) " ms" }
                    td class="status" { (opt(a.status.map(|s| s.to_string()).as_deref())) }
                    td { (opt(a.error.as_deref())) }
                    td class="claves" { (a.key_ids.join(", ")) }
                }
            }
        }
    }
}
