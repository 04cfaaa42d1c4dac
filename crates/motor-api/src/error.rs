//! The API's one error type: a status, a stable code, a message meant for
//! the caller and, for input errors, the field at fault. Database text and
//! internal details never reach the response; they are logged instead.
//!
//! Parsers and operations name a field bare (`nombre`, `limit`,
//! `tipos[3]`); the API says where in the request it travelled when it
//! maps their error: [`ApiError::in_body`], [`ApiError::in_query`],
//! [`ApiError::in_header`] (or [`Location::error`]) give `body.nombre`,
//! `query.limit`, `header.Idempotency-Key`. The plain `From`s take the
//! field as already located: use them only for operations that read no
//! request field.

use axum::{
    http::StatusCode,
    response::{IntoResponse, Response},
    Json,
};
use motor_app::AppError;
use motor_domain::{error::FieldErrorKind, FieldError};
use motor_store::StoreError;
use serde::Serialize;

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("malformed JSON: {0}")]
    MalformedJson(String),
    #[error("{0}")]
    Unauthenticated(&'static str),
    #[error("{0}")]
    Forbidden(String),
    #[error("{0} not found")]
    NotFound(&'static str),
    #[error("{0}")]
    Conflict(String),
    /// A field error whose field is already named as the client sees it
    /// (`body.url`); see [`Location`].
    #[error(transparent)]
    Field(#[from] FieldError),
    #[error("request body larger than {0} bytes")]
    BodyTooLarge(usize),
    /// The database cannot take the request now (its pool is exhausted or
    /// it is unreachable): the client should retry after a moment.
    #[error("the service is busy or its database unreachable; retry after {0} s")]
    Unavailable(u32),
    #[error("internal error")]
    Internal(#[source] Box<dyn std::error::Error + Send + Sync>),
}

#[derive(Serialize)]
struct Body<'a> {
    error: Inner<'a>,
}

#[derive(Serialize)]
struct Inner<'a> {
    code: &'a str,
    message: String,
    #[serde(rename = "campo", skip_serializing_if = "Option::is_none")]
    field: Option<&'a str>,
}

/// Every error answer: `{"error": {"code", "message", "campo"?}}`.
#[derive(Serialize, utoipa::ToSchema)]
pub struct ErrorBody {
    pub error: ErrorDetail,
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct ErrorDetail {
    /// `json_invalido` (400), `no_autenticado` (401), `sin_permiso` (403),
    /// `no_encontrado` (404), `conflicto` (409), `demasiado_grande` (413),
    /// `validacion` (422), `no_disponible` (503).
    #[schema(example = "validacion")]
    pub code: String,
    pub message: String,
    /// The field at fault, such as `body.url` or `body.instancias[3]`.
    #[schema(example = "body.url")]
    #[serde(rename = "campo")]
    pub field: Option<String>,
}

/// Where in a request a field travelled: the first word of its `campo`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Location {
    Body,
    Query,
    Path,
    Header,
}

impl Location {
    pub fn as_str(self) -> &'static str {
        match self {
            Location::Body => "body",
            Location::Query => "query",
            Location::Path => "path",
            Location::Header => "header",
        }
    }

    /// A parser's or an operation's error, its field (if it names one)
    /// put under this place: `nombre` becomes `body.nombre`, `[2].type`
    /// `body[2].type`, the whole input `body`.
    ///
    /// A field already named under this place (`body.contrato` from a
    /// parser written before fields were bare) is left as it is, so a
    /// merge of such a parser cannot answer `body.body.contrato`; new
    /// parsers name the field bare.
    pub fn error(self, e: impl Into<AppError>) -> ApiError {
        match e.into() {
            AppError::Invalid(field) if self.holds(&field.field) => ApiError::Field(field),
            AppError::Invalid(field) => ApiError::Field(field.located(self.as_str())),
            other => answer(other),
        }
    }

    /// Whether `field` is already named under this place.
    fn holds(self, field: &str) -> bool {
        field
            .strip_prefix(self.as_str())
            .is_some_and(|rest| rest.is_empty() || rest.starts_with(['.', '[']))
    }
}

impl ApiError {
    /// An error about the JSON body: `campo` is `body.<field>`.
    pub fn in_body(e: impl Into<AppError>) -> Self {
        Location::Body.error(e)
    }

    /// An error about the query string: `campo` is `query.<field>`.
    pub fn in_query(e: impl Into<AppError>) -> Self {
        Location::Query.error(e)
    }

    /// An error about a header: `campo` is `header.<name>`.
    pub fn in_header(e: impl Into<AppError>) -> Self {
        Location::Header.error(e)
    }

    pub fn status_code(&self) -> StatusCode {
        match self {
            ApiError::MalformedJson(_) => StatusCode::BAD_REQUEST,
            ApiError::Unauthenticated(_) => StatusCode::UNAUTHORIZED,
            ApiError::Forbidden(_) => StatusCode::FORBIDDEN,
            ApiError::NotFound(_) => StatusCode::NOT_FOUND,
            ApiError::Conflict(_) => StatusCode::CONFLICT,
            ApiError::Field(e) if e.kind == FieldErrorKind::TooLarge => {
                StatusCode::PAYLOAD_TOO_LARGE
            }
            ApiError::Field(_) => StatusCode::UNPROCESSABLE_ENTITY,
            ApiError::BodyTooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            ApiError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// The stable, machine-readable code.
    pub fn code(&self) -> &'static str {
        match self.status_code() {
            StatusCode::BAD_REQUEST => "json_invalido",
            StatusCode::UNAUTHORIZED => "no_autenticado",
            StatusCode::FORBIDDEN => "sin_permiso",
            StatusCode::NOT_FOUND => "no_encontrado",
            StatusCode::CONFLICT => "conflicto",
            StatusCode::PAYLOAD_TOO_LARGE => "demasiado_grande",
            StatusCode::UNPROCESSABLE_ENTITY => "validacion",
            StatusCode::SERVICE_UNAVAILABLE => "no_disponible",
            _ => "interno",
        }
    }

    pub fn field(&self) -> Option<&str> {
        match self {
            ApiError::Field(e) => Some(&e.field),
            ApiError::MalformedJson(_) | ApiError::BodyTooLarge(_) => Some("body"),
            _ => None,
        }
    }

    /// The JSON body as the API sends it (the CLI prints the same).
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(Body {
            error: Inner {
                code: self.code(),
                message: self.to_string(),
                field: self.field(),
            },
        })
        .expect("error bodies serialise")
    }

    pub fn internal(e: impl std::error::Error + Send + Sync + 'static) -> Self {
        ApiError::Internal(Box::new(e))
    }

    /// A database failure: 503 with `Retry-After` when the database is out
    /// of reach for now (no pooled connection within the acquire timeout,
    /// connection refused or cut), 500 for anything else.
    pub fn database(e: &sqlx::Error) -> Self {
        if motor_store::out_of_reach(e) {
            ApiError::Unavailable(RETRY_AFTER_SECONDS)
        } else {
            ApiError::internal(std::io::Error::other(e.to_string()))
        }
    }
}

/// What a 503 asks the client to wait.
const RETRY_AFTER_SECONDS: u32 = 1;

/// The one mapping of the application's errors to answers: a field error
/// is a 422 (413 when too large) naming the field, then 403, 404, 409,
/// 503 with `Retry-After`, and 500 for anything else (logged, not shown).
/// A field error's name is taken as it is: an operation that reads the
/// request's fields goes through [`Location::error`] instead, which puts
/// the name under its place first.
impl From<AppError> for ApiError {
    fn from(e: AppError) -> Self {
        answer(e)
    }
}

fn answer(e: AppError) -> ApiError {
    match e {
        AppError::Invalid(e) => ApiError::Field(e),
        AppError::Forbidden(message) => ApiError::Forbidden(message),
        AppError::NotFound(what) => ApiError::NotFound(what),
        AppError::Conflict(message) => ApiError::Conflict(message),
        AppError::Unavailable => ApiError::Unavailable(RETRY_AFTER_SECONDS),
        AppError::Internal(source) => ApiError::Internal(source),
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::NotFound(what) => ApiError::NotFound(what),
            StoreError::Conflict(what) => ApiError::Conflict(what),
            StoreError::Database(e) => e.into(),
        }
    }
}

impl From<sqlx::Error> for ApiError {
    fn from(e: sqlx::Error) -> Self {
        if motor_store::out_of_reach(&e) {
            ApiError::Unavailable(RETRY_AFTER_SECONDS)
        } else {
            ApiError::internal(e)
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        match &self {
            ApiError::Internal(source) => tracing::error!(error = %source, "request failed"),
            ApiError::Unavailable(after) => {
                tracing::warn!("request refused with 503: the database is out of reach");
                let retry_after = [(axum::http::header::RETRY_AFTER, after.to_string())];
                return (self.status_code(), retry_after, Json(self.to_json())).into_response();
            }
            _ => {}
        }
        (self.status_code(), Json(self.to_json())).into_response()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_errors_name_the_field() {
        let e = ApiError::from(FieldError::invalid("body.type", "is required"));
        assert_eq!(e.status_code(), StatusCode::UNPROCESSABLE_ENTITY);
        assert_eq!(e.to_json()["error"]["campo"], "body.type");
        assert_eq!(e.to_json()["error"]["code"], "validacion");
        let e = ApiError::from(FieldError::too_large("body.data", "big"));
        assert_eq!(e.status_code(), StatusCode::PAYLOAD_TOO_LARGE);
    }

    #[test]
    fn every_application_error_has_its_status_code_and_field() {
        let cases = [
            (
                AppError::from(FieldError::invalid("body.url", "bad")),
                StatusCode::UNPROCESSABLE_ENTITY,
                "validacion",
                Some("body.url"),
            ),
            (
                AppError::from(FieldError::too_large("body.data", "big")),
                StatusCode::PAYLOAD_TOO_LARGE,
                "demasiado_grande",
                Some("body.data"),
            ),
            (
                AppError::forbidden("restricted"),
                StatusCode::FORBIDDEN,
                "sin_permiso",
                None,
            ),
            (
                AppError::NotFound("subscription"),
                StatusCode::NOT_FOUND,
                "no_encontrado",
                None,
            ),
            (
                AppError::conflict("stale"),
                StatusCode::CONFLICT,
                "conflicto",
                None,
            ),
            (
                AppError::Unavailable,
                StatusCode::SERVICE_UNAVAILABLE,
                "no_disponible",
                None,
            ),
            (
                AppError::internal(std::io::Error::other("relation \"secret\"")),
                StatusCode::INTERNAL_SERVER_ERROR,
                "interno",
                None,
            ),
        ];
        for (app, status, code, field) in cases {
            let e = ApiError::from(app);
            assert_eq!(e.status_code(), status, "{e:?}");
            let body = e.to_json();
            assert_eq!(body["error"]["code"], code, "{body}");
            assert_eq!(body["error"]["campo"].as_str(), field, "{body}");
            assert!(!body.to_string().contains("secret"), "{body}");
        }
        let e = ApiError::from(AppError::NotFound("subscription"));
        assert_eq!(e.to_json()["error"]["message"], "subscription not found");
        let answer = ApiError::from(AppError::Unavailable).into_response();
        assert_eq!(answer.headers()[axum::http::header::RETRY_AFTER], "1");
    }

    #[test]
    fn a_bare_field_is_put_under_where_it_travelled() {
        let field = |e: ApiError| e.field().map(str::to_owned);
        // A parser names the field alone; the API adds its place.
        let bare = motor_domain::operator::parse_name(" ", "nombre").unwrap_err();
        assert_eq!(bare.field, "nombre");
        assert_eq!(
            field(ApiError::in_body(bare)).as_deref(),
            Some("body.nombre")
        );
        let e = |name: &str| FieldError::invalid(name, "bad");
        assert_eq!(
            field(ApiError::in_query(e("limit"))).as_deref(),
            Some("query.limit")
        );
        assert_eq!(
            field(ApiError::in_header(e("Idempotency-Key"))).as_deref(),
            Some("header.Idempotency-Key")
        );
        assert_eq!(
            field(Location::Path.error(e("id"))).as_deref(),
            Some("path.id")
        );
        // Nested fields and indexes keep their whole path after the place.
        assert_eq!(
            field(ApiError::in_body(e("destino.url"))).as_deref(),
            Some("body.destino.url")
        );
        assert_eq!(
            field(ApiError::in_body(e("[3].type"))).as_deref(),
            Some("body[3].type")
        );
        assert_eq!(
            field(ApiError::in_body(e("instancias[0]"))).as_deref(),
            Some("body.instancias[0]")
        );
        let whole = e(motor_domain::error::WHOLE_INPUT);
        assert_eq!(field(ApiError::in_body(whole)).as_deref(), Some("body"));
        // Through the application error, with its kind kept.
        let big = ApiError::in_body(AppError::from(FieldError::too_large("data", "big")));
        assert_eq!(big.status_code(), StatusCode::PAYLOAD_TOO_LARGE);
        assert_eq!(big.to_json()["error"]["campo"], "body.data");
        // A field already under its place is not put there twice.
        assert_eq!(
            field(ApiError::in_body(e("body.contrato"))).as_deref(),
            Some("body.contrato")
        );
        assert_eq!(
            field(ApiError::in_query(e("query"))).as_deref(),
            Some("query")
        );
        assert_eq!(
            field(ApiError::in_body(e("bodyguard"))).as_deref(),
            Some("body.bodyguard")
        );
        // Errors without a field pass unchanged.
        let missing = ApiError::in_body(AppError::NotFound("app"));
        assert_eq!(missing.status_code(), StatusCode::NOT_FOUND);
        assert_eq!(missing.field(), None);
    }

    #[test]
    fn internal_errors_do_not_leak() {
        let e = ApiError::from(sqlx::Error::Protocol(
            "relation \"secret\" does not exist".into(),
        ));
        assert_eq!(e.status_code(), StatusCode::INTERNAL_SERVER_ERROR);
        let body = e.to_json().to_string();
        assert!(!body.contains("secret"), "{body}");
    }

    #[test]
    fn a_database_out_of_reach_answers_503_with_retry_after() {
        for e in [
            sqlx::Error::PoolTimedOut,
            sqlx::Error::Io(std::io::Error::from(std::io::ErrorKind::ConnectionRefused)),
        ] {
            let answer = ApiError::from(StoreError::Database(e)).into_response();
            assert_eq!(answer.status(), StatusCode::SERVICE_UNAVAILABLE);
            assert_eq!(answer.headers()[axum::http::header::RETRY_AFTER], "1");
        }
        let e = ApiError::database(&sqlx::Error::PoolTimedOut);
        assert_eq!(e.to_json()["error"]["code"], "no_disponible");
        assert!(ApiError::database(&sqlx::Error::RowNotFound)
            .status_code()
            .is_server_error());
        assert_ne!(
            ApiError::database(&sqlx::Error::RowNotFound).status_code(),
            StatusCode::SERVICE_UNAVAILABLE
        );
    }
}
