//! The console's read-only pages: the overview (numbers, charts, open
//! alerts), subscriptions, the DLQ and alerts.

use std::fmt::Write;

use axum::{
    extract::State,
    http::HeaderMap,
    response::{Html, IntoResponse, Response},
};
use motor_metrics::StateLabel;
use motor_store::{alerts, operator_view};

use super::{
    chart::{line_chart, Series},
    html::{csrf_field, esc, opt, page, q, state_badge},
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

fn internal(e: impl std::fmt::Display) -> Response {
    tracing::warn!(error = %e, "console page failed");
    (
        axum::http::StatusCode::INTERNAL_SERVER_ERROR,
        Html(page(
            "Error",
            "",
            None,
            "<p>No se pudo leer la base de datos; prueba de nuevo.</p>",
        )),
    )
        .into_response()
}

pub(crate) async fn overview(State(state): State<AppState>, headers: HeaderMap) -> Response {
    let session = match viewer(&state, &headers) {
        Ok(s) => s,
        Err(r) => return *r,
    };
    let open = match alerts::list(&state.pool, Some(true), None, 20).await {
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
    let mut body = String::from("<div class=\"cards\">");
    for (label, value) in [
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
    ] {
        let _ = write!(
            body,
            "<div class=\"card\">{}<b>{}</b></div>",
            esc(label),
            esc(&value)
        );
    }
    body.push_str("</div>");
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
    body.push_str(&line_chart(
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
    ));
    body.push(' ');
    body.push_str(&line_chart(
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
    ));
    body.push_str("<h2>Alertas abiertas</h2>");
    body.push_str(&alert_table(&open, &session.csrf));
    body.push_str("<script>setTimeout(()=>location.reload(),15000)</script>");
    Html(page("Resumen", "/console", Some(&session.csrf), &body)).into_response()
}

fn alert_table(list: &[motor_domain::alert::Alert], csrf: &str) -> String {
    if list.is_empty() {
        return "<p>Ninguna.</p>".into();
    }
    let mut out = String::from(
        "<table><tr><th>Abierta</th><th>Motivo</th><th>App</th><th>Suscripción</th>\
         <th>Detalle</th><th>Estado</th><th></th></tr>",
    );
    for a in list {
        let action = if a.closed_at.is_none() {
            format!(
                "<form class=\"inline\" method=\"post\" action=\"/console/alerts/{id}/close\" \
                 data-confirm=\"¿Cerrar esta alerta?\">{csrf}<button>Cerrar</button></form>",
                id = a.id,
                csrf = csrf_field(csrf)
            )
        } else {
            String::new()
        };
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td><td><code>{}</code></td><td><code>{}</code></td>\
             <td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&motor_domain::time::format(&a.opened_at)),
            esc(&a.reason),
            opt(a.app_id.map(|x| x.to_string()).as_deref()),
            opt(a.subscription_id.map(|x| x.to_string()).as_deref()),
            esc(&a.detail),
            if a.closed_at.is_some() {
                "cerrada"
            } else {
                "abierta"
            },
            action
        );
    }
    out.push_str("</table>");
    out
}

pub(crate) async fn alerts(State(state): State<AppState>, headers: HeaderMap) -> Response {
    let session = match viewer(&state, &headers) {
        Ok(s) => s,
        Err(r) => return *r,
    };
    let list = match alerts::list(&state.pool, None, None, 200).await {
        Ok(a) => a,
        Err(e) => return internal(e),
    };
    let body = alert_table(&list, &session.csrf);
    Html(page(
        "Alertas",
        "/console/alerts",
        Some(&session.csrf),
        &body,
    ))
    .into_response()
}

pub(crate) async fn subscriptions(State(state): State<AppState>, headers: HeaderMap) -> Response {
    let session = match viewer(&state, &headers) {
        Ok(s) => s,
        Err(r) => return *r,
    };
    let list = match operator_view::subscriptions(&state.pool).await {
        Ok(l) => l,
        Err(e) => return internal(e),
    };
    let mut body = String::from(
        "<table><tr><th>App</th><th>Suscripción</th><th>Destino</th><th>Estado</th>\
         <th>Motivo</th><th>Fallando con</th><th class=\"num\">Pendientes</th><th class=\"num\">Fallidas</th><th></th></tr>",
    );
    for s in &list {
        let (action, label) = if s.state == "activa" {
            ("pause", "Pausar")
        } else {
            ("reactivate", "Reactivar")
        };
        let _ = write!(
            body,
            "<tr><td>{app}</td><td>{nombre}<br><code>{id}</code></td><td>{dest}</td><td>{estado}</td>\
             <td>{motivo}</td><td>{fallando}</td><td class=\"num\"><a href=\"/console/deliveries?estado=pendiente&amp;suscripcion_id={id}\">{p}</a></td>\
             <td class=\"num\"><a href=\"/console/deliveries?estado=fallida&amp;suscripcion_id={id}\">{f}</a></td>\
             <td><form class=\"inline\" method=\"post\" action=\"/console/subscriptions/{id}/{action}\" \
             data-confirm=\"¿{label} {nombre_attr}?\">{csrf}<button>{label}</button></form></td></tr>",
            app = esc(&s.app),
            nombre = esc(&s.name),
            nombre_attr = esc(&s.name),
            id = s.id,
            dest = esc(&destination(&s.url)),
            estado = state_badge(&s.state),
            motivo = opt(s.reason.as_deref()),
            fallando = opt(s.failing_with.as_deref()),
            p = s.pending,
            f = s.failed,
            csrf = csrf_field(&session.csrf),
        );
    }
    body.push_str("</table>");
    if list.is_empty() {
        body.push_str("<p>Ninguna suscripción.</p>");
    }
    Html(page(
        "Suscripciones",
        "/console/subscriptions",
        Some(&session.csrf),
        &body,
    ))
    .into_response()
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
    let mut body = format!(
        "<p>{} entregas fallidas. Reintentar crea entregas nuevas de los mismos eventos \
         (un replay por suscripción, con su motivo); las fallidas quedan como historial.</p>\
         <table><tr><th>Suscripción</th><th>Estado</th><th>Error</th><th class=\"num\">Fallidas</th>\
         <th>Última</th><th></th></tr>",
        summary.total
    );
    for g in &summary.grupos {
        let error = g.ultimo_error.clone().unwrap_or_default();
        let _ = write!(
            body,
            "<tr><td>{nombre}<br><code>{sub}</code></td><td>{estado}</td><td>{error_cell}</td>\
             <td class=\"num\"><a href=\"/console/deliveries?estado=fallida&amp;suscripcion_id={sub}&amp;ultimo_error={eq}\">{n}</a></td>\
             <td>{ultima}</td><td><form method=\"post\" action=\"/console/dlq/retry\">{csrf}\
             <input type=\"hidden\" name=\"suscripcion_id\" value=\"{sub}\">\
             <input type=\"hidden\" name=\"ultimo_error\" value=\"{error_attr}\">\
             <button>Reintentar…</button></form></td></tr>",
            nombre = esc(&g.suscripcion),
            sub = esc(&g.suscripcion_id),
            estado = state_badge(&g.estado_suscripcion),
            error_cell = opt(g.ultimo_error.as_deref()),
            eq = q(&error),
            n = g.fallidas,
            ultima = esc(&g.ultima_en),
            csrf = csrf_field(&session.csrf),
            error_attr = esc(&error),
        );
    }
    body.push_str("</table>");
    Html(page("DLQ", "/console/dlq", Some(&session.csrf), &body)).into_response()
}
