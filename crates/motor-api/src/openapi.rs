//! The OpenAPI 3.1 description of every route, generated from the handlers'
//! annotations. `schemas/openapi.json` is this document, committed; a test
//! fails when the two drift (regenerate with `MOTOR_UPDATE_OPENAPI=1`).
//! It is also served at `GET /v1/openapi.json`.

use axum::{routing::get, Json, Router};
use serde::Serialize;
use utoipa::{
    openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme},
    Modify, OpenApi, ToSchema,
};

use crate::AppState;

/// Every error answer: `{"error": {"code", "message", "campo"?}}`.
#[derive(Serialize, ToSchema)]
pub struct ErrorBody {
    pub error: ErrorDetail,
}

#[derive(Serialize, ToSchema)]
pub struct ErrorDetail {
    /// `json_invalido` (400), `no_autenticado` (401), `sin_permiso` (403),
    /// `no_encontrado` (404), `conflicto` (409), `demasiado_grande` (413),
    /// `validacion` (422).
    #[schema(example = "validacion")]
    pub code: String,
    pub message: String,
    /// The field at fault, such as `body.url` or `body.instancias[3]`.
    #[schema(example = "body.url")]
    pub campo: Option<String>,
}

struct Security;

impl Modify for Security {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "api_key",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some(
                        "An app's API key (`Authorization: Bearer <token>`); each route \
                         names the scope it needs.",
                    ))
                    .build(),
            ),
        );
        components.add_security_scheme(
            "admin_token",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some("The operator's `MOTOR_ADMIN_TOKEN`."))
                    .build(),
            ),
        );
    }
}

#[derive(OpenApi)]
#[openapi(
    info(
        title = "Motor",
        description = "Event-delivery engine: a per-instance ledger, signed webhooks and \
                       subscriptions, and the operator API.",
        license(name = "Apache-2.0", identifier = "Apache-2.0"),
    ),
    modifiers(&Security),
    paths(
        crate::subscriptions::post_subscription,
        crate::subscriptions::get_subscriptions,
        crate::subscriptions::get_one_subscription,
        crate::subscriptions::patch_subscription,
        crate::subscriptions::delete_one_subscription,
        crate::subscriptions::post_rotate,
        crate::settings::get_admin_settings,
        crate::settings::patch_admin_settings,
        crate::settings::get_alerts,
        crate::settings::post_close_alert,
        crate::settings::get_event_types,
        crate::settings::put_event_types,
    ),
    components(schemas(ErrorBody, ErrorDetail)),
    tags(
        (name = "subscriptions", description = "Webhook subscriptions (scope `subscriptions:manage`)"),
        (name = "admin", description = "The operator API (`MOTOR_ADMIN_TOKEN`)"),
    )
)]
pub struct ApiDoc;

/// The document as committed: pretty JSON with a final newline.
pub fn document() -> String {
    let mut json = ApiDoc::openapi()
        .to_pretty_json()
        .expect("the OpenAPI document serialises");
    json.push('\n');
    json
}

pub fn router() -> Router<AppState> {
    Router::new().route(
        "/v1/openapi.json",
        get(|| async { Json(ApiDoc::openapi()) }),
    )
}
