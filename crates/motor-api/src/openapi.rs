//! The OpenAPI 3.1 description of every route, generated from the handlers'
//! annotations. `schemas/openapi.json` is this document, committed; a test
//! fails when the two drift (regenerate with `MOTOR_UPDATE_OPENAPI=1`).
//! It is also served at `GET /v1/openapi.json`.

use std::sync::Arc;

use axum::{http::header, response::IntoResponse, Extension};
use serde::Serialize;
use utoipa::{
    openapi::{
        schema::{AllOfBuilder, AnyOfBuilder, OneOfBuilder, SchemaType},
        security::{HttpAuthScheme, HttpBuilder, SecurityScheme},
        ContentBuilder, ObjectBuilder, Ref, RefOr, Response, ResponseBuilder, Type,
    },
    Modify, OpenApi, ToSchema,
};

use utoipa_axum::{router::OpenApiRouter, routes};

use crate::{
    error::{ErrorBody, ErrorDetail},
    AppState,
};

#[derive(Serialize, ToSchema)]
#[schema(as = Health)]
pub struct HealthOut {
    /// `ok`, or `no_disponible` when Postgres does not answer.
    pub status: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub postgres: Option<String>,
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

/// The answers every route of a kind can give, added where a route's own
/// annotation does not list them (so no route can forget one): 400
/// `json_invalido` and 413 `demasiado_grande` for a body that does not
/// parse or is too large, 401 without a valid key or token, 503
/// `no_disponible` (with `Retry-After`) when the database is out of reach.
struct CommonAnswers;

impl CommonAnswers {
    fn error(description: &str) -> RefOr<Response> {
        RefOr::T(
            ResponseBuilder::new()
                .description(description)
                .content(
                    "application/json",
                    ContentBuilder::new()
                        .schema(Some(Ref::from_schema_name("ErrorBody")))
                        .build(),
                )
                .build(),
        )
    }
}

impl Modify for CommonAnswers {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        for (path, item) in openapi.paths.paths.iter_mut() {
            let operations = [
                &mut item.get,
                &mut item.put,
                &mut item.post,
                &mut item.delete,
                &mut item.patch,
            ];
            for operation in operations.into_iter().flatten() {
                let mut add = |status: &str, description: &str| {
                    operation
                        .responses
                        .responses
                        .entry(status.to_owned())
                        .or_insert_with(|| Self::error(description));
                };
                if operation.request_body.is_some() {
                    add("400", "The body is not JSON or not of the expected shape (`json_invalido`, `campo` `body`)");
                    add(
                        "413",
                        "The body is larger than the route accepts (`demasiado_grande`)",
                    );
                }
                if operation.security.as_ref().is_some_and(|s| !s.is_empty()) {
                    add(
                        "401",
                        "No key or token, or not a valid one (`no_autenticado`)",
                    );
                }
                if path.starts_with("/v1/") && path != "/v1/openapi.json" {
                    add("503", "The database is out of reach or every connection busy (`no_disponible`); retry after `Retry-After` seconds");
                }
            }
        }
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
    components(schemas(ErrorBody, ErrorDetail)),
    tags(
        (name = "health", description = "Liveness, readiness and metrics"),
        (name = "events", description = "The producer API and the ledger"),
        (name = "commands", description = "Commands: what an app asks for (scopes `commands:write`, `commands:read`)"),
        (name = "subscriptions", description = "Webhook subscriptions (scope `subscriptions:manage`)"),
        (name = "deliveries", description = "Deliveries and their attempts (scope `events:read`)"),
        (name = "executor", description = "Executors: claim, report and long-poll commands, report instance state (scope `commands:execute`)"),
        (name = "admin", description = "The operator API (`MOTOR_ADMIN_TOKEN`)"),
    )
)]
pub struct ApiDoc;

/// Completes the document the routes assembled: the security schemes and
/// the answers every route of a kind can give.
pub fn finish(mut doc: utoipa::openapi::OpenApi) -> utoipa::openapi::OpenApi {
    Security.modify(&mut doc);
    CommonAnswers.modify(&mut doc);
    doc
}

/// Renders the document as committed: pretty JSON with a final newline.
pub fn render(doc: &utoipa::openapi::OpenApi) -> String {
    let mut json = doc
        .to_pretty_json()
        .expect("the OpenAPI document serialises");
    json.push('\n');
    json
}

/// The JSON Schema of the envelope (`schemas/envelope.schema.json`).
pub fn envelope_schema() -> String {
    let schema =
        serde_json::to_value(<crate::events::EnvelopeOut as utoipa::PartialSchema>::schema())
            .expect("schemas serialise");
    let mut doc = serde_json::json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "Envelope",
    });
    doc.as_object_mut()
        .unwrap()
        .extend(schema.as_object().expect("an object schema").clone());
    let mut json = serde_json::to_string_pretty(&doc).expect("schemas serialise");
    json.push('\n');
    json
}

/// The finished document, as served (compact JSON); the router adds it as
/// an extension, since it is assembled from the routes themselves.
#[derive(Clone)]
pub struct Served(pub Arc<str>);

/// This document.
#[utoipa::path(get, path = "/v1/openapi.json", tag = "health",
    responses((status = 200, description = "The OpenAPI 3.1 document", content_type = "application/json")))]
async fn serve_document(Extension(Served(doc)): Extension<Served>) -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "application/json")],
        doc.to_string(),
    )
}

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(serve_document))
}

/// An event type as the server accepts it (`EventType::parse`): 1–200
/// characters, no control characters, no surrounding white space.
pub struct EventTypeName;

impl utoipa::PartialSchema for EventTypeName {
    fn schema() -> RefOr<utoipa::openapi::Schema> {
        ObjectBuilder::new()
            .schema_type(Type::String)
            .description(Some("1–200 characters, no control characters, no surrounding white space."))
            .pattern(Some(
                r"^[^\s\x00-\x1f\x7f-\x9f](?:[^\x00-\x1f\x7f-\x9f]{0,198}[^\s\x00-\x1f\x7f-\x9f])?$",
            ))
            .into()
    }
}

impl ToSchema for EventTypeName {}

/// An allowed destination: `host` or `host:port`. The schema names the
/// plain forms (lower-case ASCII names, IPv4 addresses); the server also
/// takes `[ipv6]`, `[ipv6]:port` and internationalised names.
pub struct DestinationEntry;

impl utoipa::PartialSchema for DestinationEntry {
    fn schema() -> RefOr<utoipa::openapi::Schema> {
        destination_entry().max_length(Some(255)).into()
    }
}

impl ToSchema for DestinationEntry {}

/// An entry of the global allowed-destinations list: as
/// [`DestinationEntry`], with no length cap.
pub struct GlobalDestinationEntry;

impl utoipa::PartialSchema for GlobalDestinationEntry {
    fn schema() -> RefOr<utoipa::openapi::Schema> {
        destination_entry().into()
    }
}

impl ToSchema for GlobalDestinationEntry {}

fn destination_entry() -> ObjectBuilder {
    const OCTET: &str = "(25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])";
    const LABEL: &str = "[a-z][a-z0-9]{0,30}(-[a-z0-9]{1,30})?";
    let pattern = format!("^(({OCTET}\\.){{3}}{OCTET}|({LABEL}\\.)*{LABEL})(:[1-9][0-9]{{0,3}})?$");
    ObjectBuilder::new()
        .schema_type(Type::String)
        .description(Some(
            "`host` or `host:port` (also `[ipv6]`, `[ipv6]:port`); no scheme, path or wildcard.",
        ))
        .pattern(Some(pattern))
}

/// A delivery's error code as `ultimo_error` holds it: `http_<status>` or
/// a named code, with `_agotada` when the retries ran out.
pub struct LastErrorCode;

impl LastErrorCode {
    /// One code, unanchored: `http_` and a status in canonical decimal
    /// (0–65535, as `ErrorCode::parse` reads it) or a named code, then
    /// optionally `_agotada`.
    fn pattern() -> String {
        const STATUS: &str =
            "(0|[1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5])";
        let named: Vec<&str> = motor_domain::delivery::ErrorCode::names().collect();
        format!("(http_{STATUS}|{})(_agotada)?", named.join("|"))
    }
}

impl utoipa::PartialSchema for LastErrorCode {
    fn schema() -> RefOr<utoipa::openapi::Schema> {
        ObjectBuilder::new()
            .schema_type(Type::String)
            .pattern(Some(format!("^{}$", Self::pattern())))
            .into()
    }
}

impl ToSchema for LastErrorCode {}

/// A comma list of [`LastErrorCode`]s (a query parameter).
pub struct LastErrorCodeList;

impl utoipa::PartialSchema for LastErrorCodeList {
    fn schema() -> RefOr<utoipa::openapi::Schema> {
        let one = LastErrorCode::pattern();
        ObjectBuilder::new()
            .schema_type(Type::String)
            .description(Some(
                "Comma list of error codes (`http_503`, `timeout_agotada`, …)",
            ))
            .pattern(Some(format!("^{one}(,{one})*$")))
            .into()
    }
}

impl ToSchema for LastErrorCodeList {}

/// Which fields of a request body go together, stated the way JSON Schema
/// can and utoipa's derive cannot: the derived object schema (`fields`),
/// all of it, and one (`exclusive`) or any of the `alternatives`.
pub fn with_alternatives(
    fields: RefOr<utoipa::openapi::Schema>,
    exclusive: bool,
    alternatives: Vec<ObjectBuilder>,
) -> RefOr<utoipa::openapi::Schema> {
    let alternatives = alternatives
        .into_iter()
        .map(|a| a.schema_type(SchemaType::AnyValue));
    let choice: utoipa::openapi::Schema = if exclusive {
        alternatives
            .fold(OneOfBuilder::new(), |one_of, a| one_of.item(a))
            .build()
            .into()
    } else {
        alternatives
            .fold(AnyOfBuilder::new(), |any_of, a| any_of.item(a))
            .build()
            .into()
    };
    AllOfBuilder::new().item(fields).item(choice).into()
}

/// An alternative of [`with_alternatives`]: these fields present and not
/// null (`Some`), those absent or null (`None`) — the server reads a null
/// field as a missing one.
pub fn alternative(fields: &[(&str, Option<Type>)]) -> ObjectBuilder {
    let mut alternative = ObjectBuilder::new();
    for (name, kind) in fields {
        match kind {
            Some(kind) => {
                alternative = alternative
                    .required(*name)
                    .property(*name, ObjectBuilder::new().schema_type(kind.clone()));
            }
            None => {
                alternative =
                    alternative.property(*name, ObjectBuilder::new().schema_type(Type::Null));
            }
        }
    }
    alternative
}
