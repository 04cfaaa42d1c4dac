//! The console's read-only pages: the overview (numbers, charts, open
//! alerts), subscriptions, the DLQ and alerts.

use axum::{
    extract::State,
    http::HeaderMap,
    response::{IntoResponse, Response},
};
use maud::{html, Markup, PreEscaped};
use motor_app::{alerts, subscriptions};
use motor_domain::alert::Alert;
use motor_metrics::StateLabel;
use motor_store::operator_view::OpSubscription;

use super::{
    chart::{line_chart, Series},
    html::{csrf_field, link, opt, page, state_badge, time_at, time_text, REFRESH_SCRIPT},
    viewer,
};
use motor_app::dlq;

use crate::{admin::operator::DlqSummary, AppState};

/// Scheme and host of a destination: never its path, query or any
/// credential.
pub(crate) fn destination(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(u) => format!("{}://{}", u.scheme(), u.host_str().unwrap_or("?")),
        Err(_) => "?".into(),
    }
}

pub(super) fn internal(e: impl std::fmt::Display) -> Response {
    tracing::warn!(error = %e, "console page failed");
    (
        axum::http::StatusCode::INTERNAL_SERVER_ERROR,
        page(
            "Error",
            "",
            None,
            html! { p { "No se pudo leer la base de datos; prueba de nuevo." } },
        ),
    )
        .into_response()
}

pub(crate) async fn overview(State(state): State<AppState>, headers: HeaderMap) -> Response {
    let session = match viewer(&state, &headers) {
        Ok(s) => s,
        Err(r) => return *r,
    };
    let open = match alerts::newest(&state.pool, Some(true), 20).await {
        Ok(a) => a,
        Err(e) => return internal(e),
    };
    let m = &state.metrics;
    let s = &m.pipeline.sampled;
    let suspended = s
        .subscriptions
        .get_or_create(&StateLabel {
            estado: "suspendida".into(),
        })
        .get();
    let cards = [
        ("Eventos aceptados", m.events_stored.get().to_string()),
        ("Duplicados", m.events_duplicate.get().to_string()),
        ("Pendientes", s.pending.get().to_string()),
        ("DLQ", s.dlq_size.get().to_string()),
        ("Outbox", s.outbox_depth.get().to_string()),
        (
            "Outbox, más antigua",
            format!("{:.0} s", s.outbox_oldest_seconds.get()),
        ),
        ("Suspendidas", suspended.to_string()),
        ("Alertas abiertas", open.len().to_string()),
    ];
    let points = m.history.points();
    let xs: Vec<i64> = points.iter().map(|p| p.at).collect();
    let rate = |f: fn(&motor_metrics::Point) -> u64| -> Vec<f64> {
        let mut out = vec![0.0];
        for w in points.windows(2) {
            let dt = (w[1].at - w[0].at).max(1) as f64;
            out.push(f(&w[1]).saturating_sub(f(&w[0])) as f64 / dt);
        }
        out.truncate(points.len());
        out
    };
    let rates = line_chart(
        "Ritmo (por segundo), última hora",
        &xs,
        &[
            Series {
                label: "aceptados/s",
                color: "#2563eb",
                values: rate(|p| p.accepted),
            },
            Series {
                label: "entregadas/s",
                color: "#17803d",
                values: rate(|p| p.delivered),
            },
            Series {
                label: "fallidas/s",
                color: "#b42318",
                values: rate(|p| p.failed),
            },
        ],
    );
    let backlog = line_chart(
        "Retraso, última hora",
        &xs,
        &[
            Series {
                label: "pendientes",
                color: "#a15c07",
                values: points.iter().map(|p| p.pending as f64).collect(),
            },
            Series {
                label: "outbox (filas)",
                color: "#6d28d9",
                values: points.iter().map(|p| p.outbox_depth as f64).collect(),
            },
            Series {
                label: "outbox, más antigua (s)",
                color: "#0e7490",
                values: points.iter().map(|p| p.outbox_oldest_seconds).collect(),
            },
        ],
    );
    let body = html! {
        div class="cards" {
            @for (label, value) in &cards {
                div class="card" { (label) b { (value) } }
            }
        }
        (rates) " " (backlog)
        h2 { "Alertas abiertas" }
        (alert_table(&open, &session.csrf))
        script { (PreEscaped(REFRESH_SCRIPT)) }
    };
    page("Resumen", "/console", Some(&session.csrf), body).into_response()
}

pub(super) fn alert_table(list: &[Alert], csrf: &str) -> Markup {
    if list.is_empty() {
        return html! { p { "Ninguna." } };
    }
    html! {
        table {
            tr {
                th { "Abierta" } th { "Motivo" } th { "App" } th { "Suscripción" }
                th { "Detalle" } th { "Estado" } th {}
            }
            @for a in list {
                tr {
                    td { (time_at(&a.opened_at)) }
                    td { (a.reason) }
                    td { code { (opt(a.app_id.map(|x| x.to_string()).as_deref())) } }
                    td { code { (opt(a.subscription_id.map(|x| x.to_string()).as_deref())) } }
                    td { (a.detail) }
                    td { @if a.closed_at.is_some() { "cerrada" } @else { "abierta" } }
                    td {
                        @if a.closed_at.is_none() {
                            form class="inline" method="post"
                                action={ "/console/alerts/" (a.id) "/close" }
                                data-confirm="¿Cerrar esta alerta?" {
                                (csrf_field(csrf))
                                button { "Cerrar" }
                            }
                        }
                    }
                }
            }
        }
    }
}

pub(crate) async fn alerts(State(state): State<AppState>, headers: HeaderMap) -> Response {
    let session = match viewer(&state, &headers) {
        Ok(s) => s,
        Err(r) => return *r,
    };
    let list = match alerts::newest(&state.pool, None, 200).await {
        Ok(a) => a,
        Err(e) => return internal(e),
    };
    let body = alert_table(&list, &session.csrf);
    page("Alertas", "/console/alerts", Some(&session.csrf), body).into_response()
}

pub(crate) async fn subscriptions(State(state): State<AppState>, headers: HeaderMap) -> Response {
    let session = match viewer(&state, &headers) {
        Ok(s) => s,
        Err(r) => return *r,
    };
    let list = match subscriptions::overview(&state.pool).await {
        Ok(l) => l,
        Err(e) => return internal(e),
    };
    let body = subscription_table(&list, &session.csrf);
    page(
        "Suscripciones",
        "/console/subscriptions",
        Some(&session.csrf),
        body,
    )
    .into_response()
}

pub(super) fn subscription_table(list: &[OpSubscription], csrf: &str) -> Markup {
    html! {
        p { a id="nueva-link" href="/console/subscriptions/new" { "Nueva suscripción" } }
        table {
            tr {
                th { "App" } th { "Suscripción" } th { "Destino" } th { "Estado" }
                th { "Motivo" } th { "Fallando con" } th class="num" { "Pendientes" }
                th class="num" { "Fallidas" } th {}
            }
            @for s in list {
                @let id = s.id.to_string();
                @let (action, label) = if s.state == "activa" {
                    ("pause", "Pausar")
                } else {
                    ("reactivate", "Reactivar")
                };
                tr {
                    td { (s.app) }
                    td { a class="suscripcion" href={ "/console/subscriptions/" (id) } { (s.name) } br; code { (id) } }
                    td { (destination(&s.url)) }
                    td { (state_badge(&s.state)) }
                    td { (opt(s.reason.as_deref())) }
                    td { (opt(s.failing_with.as_deref())) }
                    td class="num" {
                        a href=(link("/console/deliveries", [("estado", "pendiente"), ("suscripcion_id", id.as_str())])) { (s.pending) }
                    }
                    td class="num" {
                        a href=(link("/console/deliveries", [("estado", "fallida"), ("suscripcion_id", id.as_str())])) { (s.failed) }
                    }
                    td {
                        form class="inline" method="post"
                            action={ "/console/subscriptions/" (id) "/" (action) }
                            data-confirm={ "¿" (label) " " (s.name) "?" } {
                            (csrf_field(csrf))
                            button { (label) }
                        }
                    }
                }
            }
        }
        @if list.is_empty() {
            p { "Ninguna suscripción." }
        }
    }
}

pub(crate) async fn dlq(State(state): State<AppState>, headers: HeaderMap) -> Response {
    let session = match viewer(&state, &headers) {
        Ok(s) => s,
        Err(r) => return *r,
    };
    let summary = match dlq::summary(&state.pool, None).await {
        Ok(s) => DlqSummary::from(s),
        Err(e) => return internal(e),
    };
    page(
        "DLQ",
        "/console/dlq",
        Some(&session.csrf),
        dlq_table(&summary, &session.csrf),
    )
    .into_response()
}

pub(super) fn dlq_table(summary: &DlqSummary, csrf: &str) -> Markup {
    html! {
        p {
            (summary.total) " entregas fallidas. Reintentar crea entregas nuevas de los mismos \
             eventos (un replay por suscripción, con su motivo); las fallidas quedan como historial."
        }
        table {
            tr {
                th { "Suscripción" } th { "Estado" } th { "Error" } th class="num" { "Fallidas" }
                th { "Última" } th {}
            }
            @for g in &summary.grupos {
                @let error = g.ultimo_error.as_deref().unwrap_or_default();
                tr {
                    td { (g.suscripcion) br; code { (g.suscripcion_id) } }
                    td { (state_badge(&g.estado_suscripcion)) }
                    td { (opt(g.ultimo_error.as_deref())) }
                    td class="num" {
                        a href=(link("/console/deliveries", [
                            ("estado", "fallida"),
                            ("suscripcion_id", g.suscripcion_id.as_str()),
                            ("ultimo_error", error),
                        ])) { (g.fallidas) }
                    }
                    td { (time_text(&g.ultima_en)) }
                    td {
                        form method="post" action="/console/dlq/retry" {
                            (csrf_field(csrf))
                            input type="hidden" name="suscripcion_id" value=(g.suscripcion_id);
                            input type="hidden" name="ultimo_error" value=(error);
                            button { "Reintentar…" }
                        }
                    }
                }
            }
        }
    }
}
