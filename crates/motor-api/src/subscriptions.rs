//! `/v1/subscriptions` (scope `subscriptions:manage`): create, list, read,
//! change, delete and rotate the secret of an app's webhook subscriptions.
//! A secret's value appears in exactly two kinds of response — create and
//! rotate — and is sealed before it reaches the store.

use std::fmt;

use axum::{
    body::Body,
    extract::{rejection::QueryRejection, Path, Query, State},
    http::StatusCode,
    response::IntoResponse,
    routing::{get, post},
    Json, Router,
};
use motor_domain::{
    credentials::{credentials_aad, BrokerCredentials},
    seal::{secret_aad, SealingKey},
    secret::IssuedSecret,
    signature::SigningProfile,
    subscription::{
        parse_estado_patch, parse_firma, parse_instancias, parse_nombre, parse_tipos, parse_url,
        Estado, NewSubscription, Subscription, SubscriptionId,
    },
    FieldError, Scope,
};
use motor_store::{alerts, settings, subscriptions as store};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

pub use crate::subscription_rules::Access;
use crate::{
    auth::Caller,
    error::ApiError,
    extract::{comma_list, parse_json, path_id, read_body},
    subscription_rules::{check_destination, check_tipos, refuse_deleted},
    AppState,
};

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateSubscription {
    /// 1–120 characters.
    pub nombre: String,
    /// `http://` or `https://` (a webhook), `amqp[s]://host[:port]/[vhost]?exchange=NAME[&routing_key=KEY]`
    /// (RabbitMQ) or `nats://` / `tls://host[:port]/SUBJECT` (NATS
    /// JetStream); routing keys and subjects may use `{type}` and
    /// `{instance_id}`. 8–2000 characters, no user info, no fragment; the
    /// host must be an allowed destination.
    pub url: String,
    /// Up to 200 instance ids of the app; empty = all of them.
    #[serde(default)]
    pub instancias: Vec<String>,
    /// Up to 50 event types; empty = all.
    #[serde(default)]
    pub tipos: Vec<String>,
    /// Default `true`: per instance, in `seq` order.
    #[serde(default)]
    pub ordenado: Option<bool>,
    /// The signing profile: `mw-v1` (the default), `t-v1` or
    /// `standard-webhooks`.
    #[serde(default)]
    #[schema(value_type = Option<SigningProfile>)]
    pub firma: Option<String>,
    /// Broker destinations only: how to log in. Sealed at rest and never
    /// shown again (answers carry `"credenciales": true`).
    #[serde(default)]
    pub credenciales: Option<Credenciales>,
}

/// A broker's login: `usuario` and `clave` (RabbitMQ, NATS) or `token`
/// (NATS).
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Credenciales {
    pub usuario: Option<String>,
    pub clave: Option<String>,
    pub token: Option<String>,
}

impl fmt::Debug for Credenciales {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Credenciales")
            .field("usuario", &self.usuario)
            .field("clave", &self.clave.as_ref().map(|_| "[REDACTED]"))
            .field("token", &self.token.as_ref().map(|_| "[REDACTED]"))
            .finish()
    }
}

impl Credenciales {
    fn parse(&self) -> Result<BrokerCredentials, FieldError> {
        BrokerCredentials::parse(
            self.usuario.as_deref(),
            self.clave.as_deref(),
            self.token.as_deref(),
        )
    }
}

/// `null` → `Some(None)` (remove), absent → `None` (keep).
fn double_option<'de, D, T>(d: D) -> Result<Option<Option<T>>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(d).map(Some)
}

#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateSubscription {
    pub nombre: Option<String>,
    pub url: Option<String>,
    pub instancias: Option<Vec<String>>,
    pub tipos: Option<Vec<String>>,
    pub ordenado: Option<bool>,
    /// `mw-v1`, `t-v1` or `standard-webhooks`; applies from the next
    /// attempt, retries of pending deliveries included.
    #[schema(value_type = Option<SigningProfile>)]
    pub firma: Option<String>,
    /// `activa` or `pausada`.
    pub estado: Option<String>,
    /// The `version` the change is based on; another one is a 409.
    pub version_esperada: Option<i64>,
    /// Replaces a broker destination's credentials; `null` removes them.
    /// Changing `url` to a webhook removes them too.
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<Credenciales>)]
    pub credenciales: Option<Option<Credenciales>>,
}

/// A secret, shown once.
#[derive(Serialize, ToSchema)]
pub struct Secreto {
    #[schema(example = "whk_5f0c6a4e9b1d2c3a4b5c6d7e")]
    pub key_id: String,
    /// Give it to the receiver exactly as shown. mw-v1 and t-v1 key the
    /// HMAC with the whole string, `whsec_` included; standard-webhooks
    /// with the base64 decoding of what follows `whsec_`, as that
    /// specification reads a `whsec_<base64>` secret (Motor's are 64 hex
    /// digits, which are base64 too).
    #[schema(example = "whsec_…")]
    pub valor: String,
}

impl fmt::Debug for Secreto {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Secreto")
            .field("key_id", &self.key_id)
            .field("valor", &"[REDACTED]")
            .finish()
    }
}

impl From<&IssuedSecret> for Secreto {
    fn from(issued: &IssuedSecret) -> Self {
        Self {
            key_id: issued.key_id.to_string(),
            valor: issued.secret.expose().to_owned(),
        }
    }
}

/// The answer to create and rotate.
#[derive(Debug, Serialize, ToSchema)]
pub struct SubscriptionWithSecret {
    pub suscripcion: Subscription,
    pub secreto: Secreto,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct SubscriptionList {
    pub suscripciones: Vec<Subscription>,
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListQuery {
    /// Comma list of states; default `activa,pausada,suspendida`.
    pub estado: Option<String>,
}

fn seal_credentials(key: &SealingKey, id: SubscriptionId, c: &BrokerCredentials) -> Vec<u8> {
    key.seal(&c.to_plaintext(), &credentials_aad(id.as_uuid()))
}

fn seal(key: &SealingKey, id: SubscriptionId, issued: &IssuedSecret) -> Vec<u8> {
    key.seal(
        issued.secret.expose().as_bytes(),
        &secret_aad(id.as_uuid(), issued.key_id.as_str()),
    )
}

pub async fn create_subscription(
    state: &AppState,
    access: &Access,
    input: CreateSubscription,
) -> Result<SubscriptionWithSecret, ApiError> {
    let new = NewSubscription {
        nombre: parse_nombre(&input.nombre)?,
        url: parse_url(&input.url)?,
        instancias: parse_instancias(&input.instancias)?,
        tipos: parse_tipos(&input.tipos)?,
        ordenado: input.ordenado.unwrap_or(true),
        firma: input
            .firma
            .as_deref()
            .map(parse_firma)
            .transpose()?
            .unwrap_or_default(),
    };
    let credentials = input
        .credenciales
        .as_ref()
        .map(Credenciales::parse)
        .transpose()?;
    if let Some(c) = &credentials {
        c.check_fits(&new.url)?;
    }
    let mut tx = state.pool.begin().await?;
    access.check_instances(&mut tx, &new.instancias).await?;
    check_destination(&mut tx, access.app, &new.url).await?;
    check_tipos(&mut tx, access.app, &new.tipos).await?;
    let id = SubscriptionId::new();
    let issued = IssuedSecret::generate();
    let sealed = seal(&state.sealing, id, &issued);
    let sealed_credentials = credentials
        .as_ref()
        .map(|c| seal_credentials(&state.sealing, id, c));
    let suscripcion = store::insert(
        &mut tx,
        id,
        access.app,
        &new,
        &issued.key_id,
        &sealed,
        sealed_credentials.as_deref(),
    )
    .await?;
    tx.commit().await?;
    Ok(SubscriptionWithSecret {
        suscripcion,
        secreto: Secreto::from(&issued),
    })
}

pub async fn list_subscriptions(
    state: &AppState,
    access: &Access,
    estado: Option<&str>,
) -> Result<SubscriptionList, ApiError> {
    let estados = match estado {
        None => vec![Estado::Activa, Estado::Pausada, Estado::Suspendida],
        Some(raw) => comma_list(
            raw,
            "query.estado",
            "must be a comma list of activa, pausada, suspendida, eliminada",
            Estado::parse,
        )?,
    };
    let mut conn = state.pool.acquire().await?;
    let all = store::list(&mut conn, access.app, &estados).await?;
    Ok(SubscriptionList {
        suscripciones: all
            .into_iter()
            .filter(|s| access.check_visible(s).is_ok())
            .collect(),
    })
}

pub async fn get_subscription(
    state: &AppState,
    access: &Access,
    id: SubscriptionId,
) -> Result<Subscription, ApiError> {
    let mut conn = state.pool.acquire().await?;
    let sub = store::get(&mut conn, access.app, id).await?;
    access.check_visible(&sub)?;
    Ok(sub)
}

pub async fn update_subscription(
    state: &AppState,
    access: &Access,
    id: SubscriptionId,
    input: UpdateSubscription,
) -> Result<Subscription, ApiError> {
    let nombre = input.nombre.as_deref().map(parse_nombre).transpose()?;
    let url = input.url.as_deref().map(parse_url).transpose()?;
    let instancias = input
        .instancias
        .as_deref()
        .map(parse_instancias)
        .transpose()?;
    let tipos = input.tipos.as_deref().map(parse_tipos).transpose()?;
    let firma = input.firma.as_deref().map(parse_firma).transpose()?;
    let estado = input
        .estado
        .as_deref()
        .map(parse_estado_patch)
        .transpose()?;
    let credentials = match &input.credenciales {
        None => None,
        Some(None) => Some(None),
        Some(Some(c)) => Some(Some(c.parse()?)),
    };

    let mut tx = state.pool.begin().await?;
    let current = store::lock(&mut tx, access.app, id).await?;
    access.check_visible(&current)?;
    refuse_deleted(&current)?;
    if let Some(expected) = input.version_esperada {
        if expected != current.version {
            return Err(ApiError::Conflict(format!(
                "version_esperada is {expected} but the subscription is at version {}",
                current.version
            )));
        }
    }
    let mut next = current.clone();
    if let Some(nombre) = nombre {
        next.nombre = nombre;
    }
    if let Some(url) = &url {
        check_destination(&mut tx, access.app, url).await?;
        next.url = url.as_str().to_owned();
    }
    if let Some(instancias) = instancias {
        access.check_instances(&mut tx, &instancias).await?;
        next.instancias = instancias;
    }
    if let Some(tipos) = tipos {
        check_tipos(&mut tx, access.app, &tipos).await?;
        next.tipos = tipos.iter().map(|t| t.as_str().to_owned()).collect();
    }
    if let Some(ordenado) = input.ordenado {
        next.ordenado = ordenado;
    }
    if let Some(firma) = firma {
        next.firma = firma;
    }
    // Credentials: replaced, removed, or kept as long as the destination
    // can use them (a webhook cannot: moving to one drops them).
    let destination = parse_url(&next.url)?;
    let mut new_credentials = None;
    match &credentials {
        Some(Some(c)) => {
            c.check_fits(&destination)?;
            new_credentials = Some(Some(seal_credentials(&state.sealing, id, c)));
            next.credenciales = true;
        }
        Some(None) => {
            new_credentials = Some(None);
            next.credenciales = false;
        }
        None if current.credenciales && !destination.is_broker() => {
            new_credentials = Some(None);
            next.credenciales = false;
        }
        None => {}
    }
    if let Some(estado) = estado {
        if current.estado == Estado::Suspendida && estado != Estado::Suspendida {
            // Reactivating: the cause must be gone for a destination problem.
            let url = parse_url(&next.url)?;
            check_destination(&mut tx, access.app, &url).await?;
            next.motivo = None;
            next.suspendida_en = None;
            alerts::close_for_subscription(&mut tx, id).await?;
        }
        next.estado = estado;
    }
    if next == current && new_credentials.is_none() {
        return Ok(current);
    }
    if let Some(sealed) = &new_credentials {
        store::set_credentials(&mut tx, id, sealed.as_deref()).await?;
    }
    let saved = store::save(&mut tx, &next).await?;
    if current.estado != Estado::Activa && saved.estado == Estado::Activa {
        // What accumulated goes out now, in lane order: the head of every
        // lane gets its job in this transaction (each head's finish
        // releases the next).
        motor_store::deliveries::release_lane_heads(&mut tx, id).await?;
    }
    tx.commit().await?;
    Ok(saved)
}

pub async fn delete_subscription(
    state: &AppState,
    access: &Access,
    id: SubscriptionId,
) -> Result<(), ApiError> {
    let mut tx = state.pool.begin().await?;
    let current = store::lock(&mut tx, access.app, id).await?;
    access.check_visible(&current)?;
    if current.estado == Estado::Eliminada {
        return Ok(());
    }
    let mut next = current;
    next.estado = Estado::Eliminada;
    next.motivo = None;
    next.suspendida_en = None;
    store::forget_keys(&mut tx, id).await?;
    store::save(&mut tx, &next).await?;
    alerts::close_for_subscription(&mut tx, id).await?;
    tx.commit().await?;
    Ok(())
}

pub async fn rotate_secret(
    state: &AppState,
    access: &Access,
    id: SubscriptionId,
) -> Result<SubscriptionWithSecret, ApiError> {
    let mut tx = state.pool.begin().await?;
    let current = store::lock(&mut tx, access.app, id).await?;
    access.check_visible(&current)?;
    refuse_deleted(&current)?;
    let window = settings::load(&mut *tx).await?.rotation_window();
    let issued = IssuedSecret::generate();
    let sealed = seal(&state.sealing, id, &issued);
    let suscripcion = store::rotate(&mut tx, &current, &issued.key_id, &sealed, window).await?;
    tx.commit().await?;
    Ok(SubscriptionWithSecret {
        suscripcion,
        secreto: Secreto::from(&issued),
    })
}

// ---- HTTP handlers --------------------------------------------------------

pub(crate) fn manager(caller: &Caller) -> Result<Access, ApiError> {
    caller.require(Scope::SubscriptionsManage)?;
    Ok(Access::from(&caller.0))
}

/// Creates a subscription; the secret is in this answer and never again.
#[utoipa::path(post, path = "/v1/subscriptions", tag = "subscriptions",
    security(("api_key" = ["subscriptions:manage"])),
    request_body = CreateSubscription,
    responses(
        (status = 201, body = SubscriptionWithSecret),
        (status = 401, body = crate::openapi::ErrorBody), (status = 403, body = crate::openapi::ErrorBody),
        (status = 422, body = crate::openapi::ErrorBody),
    ))]
pub(crate) async fn post_subscription(
    State(state): State<AppState>,
    caller: Caller,
    body: Body,
) -> Result<impl IntoResponse, ApiError> {
    let access = manager(&caller)?;
    let input = parse_json(&read_body(body).await?)?;
    let created = create_subscription(&state, &access, input).await?;
    Ok((StatusCode::CREATED, Json(created)))
}

/// Lists the app's subscriptions (without secrets), oldest first.
#[utoipa::path(get, path = "/v1/subscriptions", tag = "subscriptions",
    security(("api_key" = ["subscriptions:manage"])),
    params(ListQuery),
    responses(
        (status = 200, body = SubscriptionList),
        (status = 401, body = crate::openapi::ErrorBody), (status = 403, body = crate::openapi::ErrorBody),
        (status = 422, body = crate::openapi::ErrorBody),
    ))]
pub(crate) async fn get_subscriptions(
    State(state): State<AppState>,
    caller: Caller,
    query: Result<Query<ListQuery>, QueryRejection>,
) -> Result<Json<SubscriptionList>, ApiError> {
    let access = manager(&caller)?;
    let Query(query) = query.map_err(|e| FieldError::invalid("query", e.body_text()))?;
    Ok(Json(
        list_subscriptions(&state, &access, query.estado.as_deref()).await?,
    ))
}

/// Reads one subscription (any state, `eliminada` included).
#[utoipa::path(get, path = "/v1/subscriptions/{id}", tag = "subscriptions",
    security(("api_key" = ["subscriptions:manage"])),
    params(("id" = String, Path, format = Uuid)),
    responses(
        (status = 200, body = Subscription),
        (status = 401, body = crate::openapi::ErrorBody), (status = 403, body = crate::openapi::ErrorBody),
        (status = 404, body = crate::openapi::ErrorBody),
    ))]
pub(crate) async fn get_one_subscription(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<Subscription>, ApiError> {
    let access = manager(&caller)?;
    let id = path_id(&id, "subscription")?;
    Ok(Json(get_subscription(&state, &access, id).await?))
}

/// Changes fields, pauses or reactivates. A stale `version_esperada` is a
/// 409.
#[utoipa::path(patch, path = "/v1/subscriptions/{id}", tag = "subscriptions",
    security(("api_key" = ["subscriptions:manage"])),
    params(("id" = String, Path, format = Uuid)),
    request_body = UpdateSubscription,
    responses(
        (status = 200, body = Subscription),
        (status = 401, body = crate::openapi::ErrorBody), (status = 403, body = crate::openapi::ErrorBody),
        (status = 404, body = crate::openapi::ErrorBody), (status = 409, body = crate::openapi::ErrorBody),
        (status = 422, body = crate::openapi::ErrorBody),
    ))]
pub(crate) async fn patch_subscription(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    body: Body,
) -> Result<Json<Subscription>, ApiError> {
    let access = manager(&caller)?;
    let id = path_id(&id, "subscription")?;
    let input = parse_json(&read_body(body).await?)?;
    Ok(Json(update_subscription(&state, &access, id, input).await?))
}

/// Deletes it: state `eliminada`, no new deliveries, pending ones not
/// sent. The row stays for audit; no event is deleted.
#[utoipa::path(delete, path = "/v1/subscriptions/{id}", tag = "subscriptions",
    security(("api_key" = ["subscriptions:manage"])),
    params(("id" = String, Path, format = Uuid)),
    responses(
        (status = 204),
        (status = 401, body = crate::openapi::ErrorBody), (status = 403, body = crate::openapi::ErrorBody),
        (status = 404, body = crate::openapi::ErrorBody),
    ))]
pub(crate) async fn delete_one_subscription(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    let access = manager(&caller)?;
    let id = path_id(&id, "subscription")?;
    delete_subscription(&state, &access, id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Issues a new secret (shown once). The previous one keeps signing for
/// `webhooks.ventana_rotacion_minutos`, then expires.
#[utoipa::path(post, path = "/v1/subscriptions/{id}/rotate", tag = "subscriptions",
    security(("api_key" = ["subscriptions:manage"])),
    params(("id" = String, Path, format = Uuid)),
    responses(
        (status = 200, body = SubscriptionWithSecret),
        (status = 401, body = crate::openapi::ErrorBody), (status = 403, body = crate::openapi::ErrorBody),
        (status = 404, body = crate::openapi::ErrorBody), (status = 409, body = crate::openapi::ErrorBody),
    ))]
pub(crate) async fn post_rotate(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<SubscriptionWithSecret>, ApiError> {
    let access = manager(&caller)?;
    let id = path_id(&id, "subscription")?;
    Ok(Json(rotate_secret(&state, &access, id).await?))
}

pub fn router() -> Router<AppState> {
    Router::new()
        .route(
            "/v1/subscriptions",
            get(get_subscriptions).post(post_subscription),
        )
        .route(
            "/v1/subscriptions/{id}",
            get(get_one_subscription)
                .patch(patch_subscription)
                .delete(delete_one_subscription),
        )
        .route("/v1/subscriptions/{id}/rotate", post(post_rotate))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_output_never_shows_a_secret() {
        let issued = IssuedSecret::generate();
        let secreto = Secreto::from(&issued);
        let printed = format!("{secreto:?} {issued:?}");
        assert!(!printed.contains(issued.secret.expose()), "{printed}");
        assert!(!printed.contains(&issued.secret.expose()["whsec_".len()..]));
        assert!(printed.contains(issued.key_id.as_str()));
    }
}
