//! Every console renderer fed the same hostile text (markup, an attribute
//! break-out with an event handler, entities) in every field that can hold
//! text: the output shows it only as text. The browser test
//! (`tests/tests/it/operators/console_inert.rs`) does the same through the
//! API and a real browser.

use std::collections::HashMap;

use chrono::{TimeZone, Utc};
use motor_domain::alert::Alert;
use motor_store::operator_view::OpSubscription;

use super::{
    actions::confirm_body,
    deliveries::{detail_body, results_table, search_form},
    html::tests::{hostile, inert},
    login_page,
    pages::{alert_table, dlq_table, subscription_table},
};
use crate::{
    admin::operator::{DlqGroup, DlqSummary, OperatorDelivery, OperatorDeliveryDetail},
    deliveries::AttemptView,
};

fn delivery(h: &str, estado: &str) -> OperatorDelivery {
    OperatorDelivery {
        delivery_id: h.into(),
        app_id: h.into(),
        suscripcion_id: h.into(),
        suscripcion: h.into(),
        instance_id: h.into(),
        instancia: h.into(),
        event_id: h.into(),
        seq: 1,
        event_type: h.into(),
        carril: h.into(),
        estado: estado.into(),
        motivo: None,
        intentos: 1,
        proximo_intento_en: Some(h.into()),
        ultimo_status: Some(410),
        ultimo_error: Some(h.into()),
        creada_en: h.into(),
        entregada_en: Some(h.into()),
    }
}

#[test]
fn the_alert_table_shows_hostile_text_inert() {
    let h = hostile();
    let alert = Alert {
        id: uuid::Uuid::now_v7(),
        app_id: None,
        subscription_id: None,
        reason: h.clone(),
        detail: h.clone(),
        opened_at: Utc.with_ymd_and_hms(2026, 12, 3, 7, 5, 9).unwrap(),
        closed_at: None,
    };
    let out = alert_table(&[alert], &h).into_string();
    assert!(inert(&out), "{out}");
    assert!(out.contains(
        "<time datetime=\"2026-12-03T07:05:09Z\" title=\"2026-12-03T07:05:09Z\">3 dic 2026, 07:05:09 UTC</time>"
    ));
}

#[test]
fn the_subscription_table_shows_hostile_text_inert_and_no_url_path() {
    let h = hostile();
    let sub = OpSubscription {
        id: uuid::Uuid::now_v7(),
        app_id: uuid::Uuid::now_v7(),
        app: h.clone(),
        name: h.clone(),
        url: "http://127.0.0.1:9/%3Cscript%3E?q=%22%27%3E%3Cimg%20src=x%3E&amp;".into(),
        state: "activa".into(),
        reason: Some(h.clone()),
        suspended_at: None,
        ordered: true,
        pending: 2,
        failed: 3,
        failing_with: Some(h.clone()),
    };
    let out = subscription_table(&[sub], &h).into_string();
    assert!(inert(&out), "{out}");
    assert!(out.contains("<td>http://127.0.0.1</td>"), "{out}");
    assert!(!out.contains("%3Cscript") && !out.contains("q="), "{out}");
    // The confirmation question is an attribute, escaped as one.
    assert!(
        out.contains("data-confirm=\"¿Pausar &lt;script&gt;"),
        "{out}"
    );
}

#[test]
fn the_dlq_table_shows_hostile_text_inert_and_links_it_encoded() {
    let h = hostile();
    let summary = DlqSummary {
        total: 1,
        grupos: vec![DlqGroup {
            app_id: h.clone(),
            suscripcion_id: h.clone(),
            suscripcion: h.clone(),
            estado_suscripcion: h.clone(),
            ultimo_error: Some(h.clone()),
            fallidas: 1,
            ultima_en: h.clone(),
        }],
    };
    let out = dlq_table(&summary, &h).into_string();
    assert!(inert(&out), "{out}");
    assert!(
        out.contains("&amp;ultimo_error=%3Cscript%3Ealert%281%29%3C%2Fscript%3E+%22%27%3E"),
        "{out}"
    );
}

#[test]
fn delivery_pages_show_hostile_text_inert() {
    let h = hostile();
    let params: HashMap<String, String> = [
        "estado",
        "app_id",
        "suscripcion_id",
        "instancia_id",
        "ultimo_error",
        "desde",
    ]
    .into_iter()
    .map(|k| (k.to_owned(), h.clone()))
    .collect();
    let form = search_form(&params).into_string();
    assert!(inert(&form), "{form}");
    let results = results_table(&[delivery(&h, &h)]).into_string();
    assert!(inert(&results), "{results}");
    let detail = OperatorDeliveryDetail {
        entrega: delivery(&h, "fallida"),
        intentos_detalle: vec![AttemptView {
            numero: 1,
            iniciado_en: h.clone(),
            duracion_ms: 3,
            status: Some(410),
            error: Some(h.clone()),
            key_ids: h.clone(),
            throttled: false,
        }],
    };
    let out = detail_body(&detail, Some(&h), &h).into_string();
    assert!(inert(&out), "{out}");
    // The retry form's action keeps the id inside its attribute.
    assert!(
        out.contains("action=\"/console/deliveries/&lt;script&gt;"),
        "{out}"
    );
}

#[test]
fn the_confirmation_and_login_pages_show_hostile_text_inert() {
    let h = hostile();
    let fields: HashMap<String, String> = [(h.clone(), h.clone()), ("motivo".into(), h.clone())]
        .into_iter()
        .collect();
    let out = confirm_body(&h, &h, &h, &fields, Some(&h)).into_string();
    assert!(inert(&out), "{out}");
    assert_eq!(out.matches("<input").count(), 4, "{out}");
    let login = login_page(Some(&h)).into_string();
    assert!(inert(&login), "{login}");
}

#[test]
fn the_filters_with_a_closed_set_are_select_lists() {
    let params: HashMap<String, String> = [
        ("estado".to_owned(), "fallida".to_owned()),
        ("ultimo_error".to_owned(), "http_503_agotada".to_owned()),
    ]
    .into_iter()
    .collect();
    let form = search_form(&params).into_string();
    assert!(form.contains("<option value=\"fallida\" selected>fallida</option>"));
    assert!(form.contains("<option value=\"http_503_agotada\" selected>"));
    assert!(form.contains("<option value=\"timeout\">timeout</option>"));
    assert!(form.contains("<option value=\"http_410\">http_410</option>"));
    assert!(!form.contains("name=\"estado\" id=\"f-estado\" value"));
    assert_eq!(form.matches("<select").count(), 2);
}

/// The console's sources, for the check below.
const SOURCES: [(&str, &str); 10] = [
    ("actions.rs", include_str!("actions.rs")),
    ("apps.rs", include_str!("apps.rs")),
    ("manage.rs", include_str!("manage.rs")),
    ("subscription.rs", include_str!("subscription.rs")),
    ("chart.rs", include_str!("chart.rs")),
    ("deliveries.rs", include_str!("deliveries.rs")),
    ("html.rs", include_str!("html.rs")),
    ("mod.rs", include_str!("mod.rs")),
    ("pages.rs", include_str!("pages.rs")),
    ("session.rs", include_str!("session.rs")),
];

#[test]
fn only_the_consoles_own_constants_skip_escaping() {
    let allowed = [
        "PreEscaped(STYLE)",
        "PreEscaped(CONFIRM_SCRIPT)",
        "PreEscaped(REFRESH_SCRIPT)",
    ];
    let mut seen = Vec::new();
    for (file, source) in SOURCES {
        for (at, _) in source.match_indices("PreEscaped(") {
            let call = &source[at..];
            let call = &call[..=call.find(')').expect("a closing parenthesis")];
            assert!(allowed.contains(&call), "{file}: {call} skips escaping");
            seen.push(call);
        }
    }
    seen.sort_unstable();
    seen.dedup();
    assert_eq!(seen.len(), allowed.len(), "{seen:?}");
}

/// A subscription whose every text holds `h`, behind a URL with a path
/// and a query.
fn hostile_subscription(h: &str) -> motor_domain::subscription::Subscription {
    use motor_domain::{
        secret::SigningKeyId,
        subscription::{Subscription, SubscriptionId, SubscriptionKey, SubscriptionState},
        AppId,
    };
    let at = Utc.with_ymd_and_hms(2026, 12, 3, 7, 5, 9).unwrap();
    Subscription {
        id: SubscriptionId::new(),
        app_id: AppId::from_uuid(uuid::Uuid::now_v7()),
        name: h.into(),
        url: "https://hooks.example.org/secret-path?token=abc".into(),
        has_credentials: false,
        instances: vec![],
        event_types: vec![h.into()],
        ordering: motor_domain::contract::Ordering::Instance,
        signature: Default::default(),
        contract: Default::default(),
        environment: Default::default(),
        max_per_second: None,
        state: SubscriptionState::Active,
        reason: None,
        suspended_at: None,
        version: 3,
        keys: vec![SubscriptionKey {
            key_id: SigningKeyId::generate(),
            created_at: at,
            expires_at: None,
        }],
        pending: 0,
        failed: 0,
        created_at: at,
        updated_at: at,
    }
}

#[test]
fn the_management_pages_show_hostile_text_inert_and_no_url_path() {
    use super::{
        apps::apps_table,
        manage::{edit_form, new_form, AppChoice},
        subscription::summary,
    };
    let h = hostile();
    let sub = hostile_subscription(&h);
    let mut typed = HashMap::new();
    typed.insert("nombre".to_owned(), h.clone());
    typed.insert("url".to_owned(), h.clone());
    for out in [
        summary(&sub).into_string(),
        edit_form(&sub, &h, &HashMap::new()).into_string(),
    ] {
        assert!(inert(&out), "{out}");
        assert!(
            !out.contains("secret-path") && !out.contains("token=abc"),
            "{out}"
        );
    }
    // Values typed into a form that failed come back as values.
    let out = edit_form(&sub, &h, &typed).into_string();
    assert!(
        !out.contains("<script>alert") && !out.contains("<img"),
        "{out}"
    );
    let apps = [AppChoice {
        id_text: h.clone(),
        name: h.clone(),
    }];
    let out = new_form(&apps, &h, &typed).into_string();
    assert!(inert(&out), "{out}");
    let app = motor_domain::operator::App {
        id: motor_domain::AppId::from_uuid(uuid::Uuid::now_v7()),
        name: h.clone(),
        allowed_destinations: vec![h.clone()],
        destination_policy: Default::default(),
        contract: Default::default(),
        created_at: Utc.with_ymd_and_hms(2026, 12, 3, 7, 5, 9).unwrap(),
    };
    let out = apps_table(&[app], &h, None).into_string();
    assert!(inert(&out), "{out}");
}

#[test]
fn the_success_rate_is_delivered_out_of_finished() {
    use motor_store::subscription_stats::SubscriptionStats;

    use super::subscription::success_rate;
    let s = |delivered, failed| SubscriptionStats {
        delivered,
        failed,
        pending: 7,
        ..Default::default()
    };
    assert_eq!(success_rate(&s(3, 1)), "75.0 %");
    assert_eq!(success_rate(&s(0, 2)), "0.0 %");
    assert_eq!(success_rate(&s(2, 0)), "100.0 %");
    assert_eq!(success_rate(&s(0, 0)), "—");
}
