//! `POST /v1/subscriptions/{id}/replays` (scope `deliveries:replay`) and
//! the operator's `POST /v1/admin/apps/{id}/subscriptions/{sid}/replays`:
//! send events already in the ledger again, as new deliveries in the
//! replay's own ordered lane. The request is checked by
//! `motor_domain::replay`, the deliveries and jobs are written by
//! `motor_store::replays`, in one transaction.

use std::borrow::Cow;

use axum::{
    body::Body,
    extract::{Path, State},
    http::{HeaderMap, StatusCode},
    response::IntoResponse,
    Json,
};
use motor_domain::{
    delivery::ReplayId,
    replay::{parse_idempotency_key, RawReplay, ReplayRequest, Selection},
    subscription::SubscriptionId,
    time::{serde_ts, Timestamp},
    AppId, FieldError, Scope,
};
use motor_store::{
    operator,
    replays::{self as store, NewReplay, StoredReplay},
    subscriptions, Pool,
};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use utoipa::{
    openapi::{RefOr, Schema, Type},
    ToSchema,
};

use utoipa_axum::{router::OpenApiRouter, routes};

use crate::{
    auth::{Caller, Operator},
    error::ApiError,
    extract::{parse_json, path_id, read_body},
    openapi::alternative,
    subscriptions::rules::{refuse_deleted, Access},
    AppState,
};

/// Who a replay is recorded as when the operator asks for it.
pub const OPERATOR: &str = "operador";

/// A replay request: a range of one instance's ledger, or a list of
/// events — not both.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateReplay {
    /// With `desde_seq` and `hasta_seq`: the instance whose ledger to
    /// replay.
    #[schema(format = Uuid)]
    pub instancia_id: Option<String>,
    /// First seq of the range (at least 1).
    #[schema(minimum = 1)]
    pub desde_seq: Option<i64>,
    /// Last seq of the range (inclusive): at least `desde_seq`; a range
    /// spans at most 10 000 seqs.
    #[schema(minimum = 1)]
    pub hasta_seq: Option<i64>,
    /// Or 1 to 500 event ids.
    #[schema(min_items = 1, max_items = 500, value_type = Option<Vec<uuid::Uuid>>)]
    pub event_ids: Option<Vec<String>>,
    /// Why: 1–300 characters, kept for the audit.
    #[schema(
        max_length = 300,
        pattern = "^[^\\u0000]*[^\\u0000\\t\\n\\u000b\\f\\r \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000][^\\u0000]*$"
    )]
    pub motivo: String,
}

/// The documented body of a replay request: [`CreateReplay`]'s fields, and
/// either the whole range (`instancia_id`, `desde_seq`, `hasta_seq`) or
/// `event_ids` — the others absent or null.
pub struct CreateReplayBody;

impl utoipa::PartialSchema for CreateReplayBody {
    fn schema() -> RefOr<Schema> {
        crate::openapi::with_alternatives(
            CreateReplay::schema(),
            true,
            vec![
                alternative(&[
                    ("instancia_id", Some(Type::String)),
                    ("desde_seq", Some(Type::Integer)),
                    ("hasta_seq", Some(Type::Integer)),
                    ("event_ids", None),
                ]),
                alternative(&[
                    ("event_ids", Some(Type::Array)),
                    ("instancia_id", None),
                    ("desde_seq", None),
                    ("hasta_seq", None),
                ]),
            ],
        )
    }
}

impl ToSchema for CreateReplayBody {
    fn name() -> Cow<'static, str> {
        CreateReplay::name()
    }

    fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
        CreateReplay::schemas(schemas);
    }
}

/// The answer: 202, also to a repeat with the same Idempotency-Key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Replay {
    #[schema(value_type = String, format = Uuid)]
    pub replay_id: ReplayId,
    #[schema(value_type = String, format = Uuid)]
    pub suscripcion_id: SubscriptionId,
    /// How many new deliveries it created.
    pub entregas: i64,
    #[serde(with = "serde_ts")]
    #[schema(value_type = String, format = DateTime)]
    pub creado_en: Timestamp,
}

impl From<StoredReplay> for Replay {
    fn from(r: StoredReplay) -> Self {
        Self {
            replay_id: r.id,
            suscripcion_id: r.subscription_id,
            entregas: r.entregas,
            creado_en: r.creado_en,
        }
    }
}

/// Replays events to a subscription of `access.app`. Validation first (a
/// refused request does not use up its key); then, under the
/// subscription's lock: 403 for a subscription or instances outside the
/// key's restriction, 422 for an `instancia_id` of another app; the key's
/// earlier answer if it was used with this same request (409 with
/// another); 409 for an `eliminada` subscription; then the deliveries,
/// their jobs and the replay's row. Events of other apps and unknown ids are skipped, like
/// events the subscription does not cover.
pub async fn create_replay(
    pool: &Pool,
    access: &Access,
    solicitado_por: &str,
    id: SubscriptionId,
    idempotency_key: &str,
    input: CreateReplay,
) -> Result<Replay, ApiError> {
    let request = ReplayRequest::parse(RawReplay {
        instancia_id: input.instancia_id.as_deref(),
        desde_seq: input.desde_seq,
        hasta_seq: input.hasta_seq,
        event_ids: input.event_ids.as_deref(),
        motivo: &input.motivo,
    })?;
    let request_hash = Sha256::digest(request.canonical(id).as_bytes()).to_vec();

    let mut tx = pool.begin().await?;
    let sub = subscriptions::lock(&mut tx, access.app, id).await?;
    access.check_visible(&sub)?;
    check_instances(&mut tx, access, &request.selection).await?;
    if let Some(first) = store::find(&mut tx, access.app, idempotency_key).await? {
        if first.request_hash != request_hash {
            return Err(ApiError::Conflict(
                "this Idempotency-Key was used with a different request".into(),
            ));
        }
        return Ok(first.into());
    }
    refuse_deleted(&sub)?;
    let stored = store::create(
        &mut tx,
        &NewReplay {
            app: access.app,
            subscription: id,
            idempotency_key,
            request_hash: &request_hash,
            solicitado_por,
            request: &request,
        },
    )
    .await?;
    tx.commit().await?;
    Ok(stored.into())
}

/// A range's instance must be the app's (422) and, for a restricted key,
/// one of its own (403); listed events must all be in the key's
/// instances (403).
async fn check_instances(
    conn: &mut sqlx::PgConnection,
    access: &Access,
    selection: &Selection,
) -> Result<(), ApiError> {
    let forbidden = || ApiError::Forbidden("this key is restricted to other instances".into());
    match selection {
        Selection::Range { instancia_id, .. } => {
            if !access.restriction.is_empty() && !access.restriction.contains(instancia_id) {
                return Err(forbidden());
            }
            match operator::instance_app(&mut *conn, *instancia_id).await? {
                Some(app) if app == access.app => Ok(()),
                _ => Err(
                    FieldError::invalid("body.instancia_id", "not an instance of this app").into(),
                ),
            }
        }
        Selection::Events(ids) => {
            if access.restriction.is_empty() {
                return Ok(());
            }
            let instances = store::instances_of(conn, access.app, ids).await?;
            if instances.iter().any(|i| !access.restriction.contains(i)) {
                return Err(forbidden());
            }
            Ok(())
        }
    }
}

pub(crate) fn idempotency_key(headers: &HeaderMap) -> Result<String, ApiError> {
    let raw = match headers.get("idempotency-key") {
        None => None,
        Some(value) => Some(value.to_str().map_err(|_| {
            FieldError::invalid(
                "header.Idempotency-Key",
                "must be 1 to 200 printable characters",
            )
        })?),
    };
    Ok(parse_idempotency_key(raw)?)
}

// ---- HTTP handlers --------------------------------------------------------

/// Sends events already in the ledger again: new delivery ids, the same
/// envelope (event_id, occurred_at), in the replay's own lane, only what
/// the subscription covers.
#[utoipa::path(post, path = "/v1/subscriptions/{id}/replays", tag = "subscriptions",
    security(("api_key" = ["deliveries:replay"])),
    params(("id" = String, Path, format = Uuid),
           ("Idempotency-Key" = String, Header, min_length = 1, max_length = 200, description = "Required, 1–200 characters; the same key with another request is a 409, with the same one the first answer")),
    request_body = CreateReplayBody,
    responses(
        (status = 202, body = Replay),
        (status = 400, body = crate::error::ErrorBody), (status = 401, body = crate::error::ErrorBody),
        (status = 403, body = crate::error::ErrorBody), (status = 404, body = crate::error::ErrorBody),
        (status = 409, body = crate::error::ErrorBody), (status = 422, body = crate::error::ErrorBody),
    ))]
pub(crate) async fn request_replay(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Result<impl IntoResponse, ApiError> {
    caller.require(Scope::DeliveriesReplay)?;
    let access = Access::from(&caller.0);
    let id = path_id(&id, "subscription")?;
    let key = idempotency_key(&headers)?;
    let input = parse_json(&read_body(body).await?)?;
    let replay = create_replay(&state.pool, &access, &caller.0.key_id, id, &key, input).await?;
    Ok((StatusCode::ACCEPTED, Json(replay)))
}

/// The same replay, asked for by the operator for one of the app's
/// subscriptions.
#[utoipa::path(post, path = "/v1/admin/apps/{id}/subscriptions/{sid}/replays", tag = "admin",
    security(("admin_token" = [])),
    params(("id" = String, Path, format = Uuid, description = "App id"), ("sid" = String, Path, format = Uuid, description = "Subscription id"),
           ("Idempotency-Key" = String, Header, min_length = 1, max_length = 200, description = "Required, 1–200 characters")),
    request_body = CreateReplayBody,
    responses(
        (status = 202, body = Replay),
        (status = 400, body = crate::error::ErrorBody), (status = 401, body = crate::error::ErrorBody),
        (status = 404, body = crate::error::ErrorBody), (status = 409, body = crate::error::ErrorBody),
        (status = 422, body = crate::error::ErrorBody),
    ))]
pub(crate) async fn request_app_replay(
    _: Operator,
    State(state): State<AppState>,
    Path((app, id)): Path<(String, String)>,
    headers: HeaderMap,
    body: Body,
) -> Result<impl IntoResponse, ApiError> {
    let app: AppId = path_id(&app, "app")?;
    operator::get_app(&state.pool, app).await?;
    let access = Access {
        app,
        restriction: Vec::new(),
    };
    let id = path_id(&id, "subscription")?;
    let key = idempotency_key(&headers)?;
    let input = parse_json(&read_body(body).await?)?;
    let replay = create_replay(&state.pool, &access, OPERATOR, id, &key, input).await?;
    Ok((StatusCode::ACCEPTED, Json(replay)))
}

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(request_replay))
        .routes(routes!(request_app_replay))
}
