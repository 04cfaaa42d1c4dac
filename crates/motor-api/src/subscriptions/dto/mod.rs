//! The wire types of `/v1/subscriptions`: request bodies (with serde's
//! field rules) here, and answers (with their OpenAPI schemas) in `answer`.

use std::fmt;

use motor_app::subscriptions::{
    NewSubscriptionInput, RawCredentials, SubscriptionChange, WithSecret,
};
use motor_domain::secret::IssuedSecret;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateSubscription {
    /// 1–120 characters.
    #[schema(
        max_length = 120,
        pattern = "^[^\\u0000]*[^\\u0000\\t\\n\\u000b\\f\\r \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000][^\\u0000]*$"
    )]
    pub nombre: String,
    /// `http://` or `https://` (a webhook), `amqp[s]://host[:port]/[vhost]?exchange=NAME[&routing_key=KEY]`
    /// (RabbitMQ) or `nats://` / `tls://host[:port]/SUBJECT` (NATS
    /// JetStream); routing keys and subjects may use `{type}` and
    /// `{instance_id}`. 8–2000 characters, no user info, no fragment; the
    /// host must be an allowed destination.
    #[schema(
        min_length = 8,
        max_length = 2000,
        pattern = "^(https?|amqps?|nats|tls)://[^\\s\\x00-\\x1f\\x7f-\\x9f]+$"
    )]
    pub url: String,
    /// Up to 200 instance ids of the app; empty = all of them.
    #[serde(default)]
    #[schema(value_type = Vec<uuid::Uuid>)]
    pub instancias: Vec<String>,
    /// Up to 50 event types; empty = all.
    #[serde(default)]
    #[schema(value_type = Vec<crate::openapi::EventTypeName>)]
    pub tipos: Vec<String>,
    /// The older form of `orden`: `true` = `instancia`, `false` =
    /// `ninguno`. Both may be sent when they agree (`true` with `clave`);
    /// otherwise a 422 naming `ordenado`.
    #[serde(default)]
    pub ordenado: Option<bool>,
    /// `instancia` (per instance, in `seq` order), `clave` (per instance
    /// and event `orden_clave`, keys in parallel) or `ninguno`. With
    /// neither `orden` nor `ordenado`, the contract's default: `motor` and
    /// `standard-webhooks` `instancia`, `visito` `ninguno`, `asixto`
    /// `clave`.
    #[serde(default)]
    #[schema(value_type = Option<OrderingOut>)]
    pub orden: Option<String>,
    /// The signing profile: `mw-v1` (the default), `t-v1` or
    /// `standard-webhooks`.
    #[serde(default)]
    #[schema(value_type = Option<crate::subscriptions::SigningProfileOut>)]
    pub firma: Option<String>,
    /// The product contract its deliveries follow: `motor`,
    /// `visito`, `asixto` or `standard-webhooks`; absent = the app's
    /// `contrato` (`motor` unless the operator chose another). Under any
    /// contract but `motor`, `firma` is not used: the contract fixes the
    /// signature (docs/CONTRACTS.md).
    #[serde(default)]
    #[schema(value_type = Option<ContractOut>)]
    pub contrato: Option<String>,
    /// `live` (the default) or `test`: it receives only events of that
    /// environment (an event names its own, default `live`). Fixed at
    /// creation.
    #[serde(default)]
    #[schema(value_type = Option<EnvironmentOut>)]
    pub entorno: Option<String>,
    /// Broker destinations only: how to log in. Sealed at rest and never
    /// shown again (answers carry `"credenciales": true`).
    #[serde(default)]
    pub credenciales: Option<Credenciales>,
    /// At most this many attempts a second (1–10 000), across every lane
    /// and every Motor process; absent or `null` = no limit.
    #[serde(default)]
    #[schema(minimum = 1, maximum = 10000)]
    pub max_por_segundo: Option<i64>,
}

/// A broker's login: `usuario` and `clave` (RabbitMQ, NATS) or `token`
/// (NATS).
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Credenciales {
    #[schema(
        min_length = 1,
        max_length = 255,
        pattern = "^[^\\x00-\\x1f\\x7f-\\x9f]*$"
    )]
    pub usuario: Option<String>,
    #[schema(
        min_length = 1,
        max_length = 4096,
        pattern = "^[^\\x00-\\x1f\\x7f-\\x9f]*$"
    )]
    pub clave: Option<String>,
    #[schema(
        min_length = 1,
        max_length = 4096,
        pattern = "^[^\\x00-\\x1f\\x7f-\\x9f]*$"
    )]
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

impl From<Credenciales> for RawCredentials {
    fn from(c: Credenciales) -> Self {
        Self {
            user: c.usuario,
            password: c.clave,
            token: c.token,
        }
    }
}

impl From<CreateSubscription> for NewSubscriptionInput {
    fn from(b: CreateSubscription) -> Self {
        Self {
            name: b.nombre,
            url: b.url,
            instances: b.instancias,
            types: b.tipos,
            ordered: b.ordenado,
            ordering: b.orden,
            signature: b.firma,
            contract: b.contrato,
            environment: b.entorno,
            credentials: b.credenciales.map(Into::into),
            max_per_second: b.max_por_segundo,
        }
    }
}

impl From<UpdateSubscription> for SubscriptionChange {
    fn from(b: UpdateSubscription) -> Self {
        Self {
            name: b.nombre,
            url: b.url,
            instances: b.instancias,
            types: b.tipos,
            ordered: b.ordenado,
            ordering: b.orden,
            signature: b.firma,
            contract: b.contrato,
            environment: b.entorno,
            state: b.estado,
            expected_version: b.version_esperada,
            credentials: b.credenciales.map(|c| c.map(Into::into)),
            max_per_second: b.max_por_segundo,
        }
    }
}

impl From<WithSecret> for SubscriptionWithSecret {
    fn from(w: WithSecret) -> Self {
        Self {
            suscripcion: w.subscription.into(),
            secreto: Secreto::from(&w.secret),
        }
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
    #[schema(
        max_length = 120,
        pattern = "^[^\\u0000]*[^\\u0000\\t\\n\\u000b\\f\\r \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000][^\\u0000]*$"
    )]
    pub nombre: Option<String>,
    #[schema(
        min_length = 8,
        max_length = 2000,
        pattern = "^(https?|amqps?|nats|tls)://[^\\s\\x00-\\x1f\\x7f-\\x9f]+$"
    )]
    pub url: Option<String>,
    #[schema(value_type = Option<Vec<uuid::Uuid>>)]
    pub instancias: Option<Vec<String>>,
    #[schema(value_type = Option<Vec<crate::openapi::EventTypeName>>)]
    pub tipos: Option<Vec<String>>,
    /// `true` keeps a `clave` subscription `clave` (it is ordered);
    /// otherwise as on create.
    pub ordenado: Option<bool>,
    /// `instancia`, `clave` or `ninguno`; applies to deliveries created
    /// after the change (open ones keep their lanes). Changing `contrato`
    /// does not change it.
    #[schema(value_type = Option<OrderingOut>)]
    pub orden: Option<String>,
    /// `mw-v1`, `t-v1` or `standard-webhooks`; applies from the next
    /// attempt, retries of pending deliveries included.
    #[schema(value_type = Option<crate::subscriptions::SigningProfileOut>)]
    pub firma: Option<String>,
    /// `motor`, `visito`, `asixto` or `standard-webhooks`; applies from the
    /// next attempt (its body, headers and signature). A pending delivery
    /// keeps the retry ladder it started with.
    #[schema(value_type = Option<ContractOut>)]
    pub contrato: Option<String>,
    /// Fixed at creation: the subscription's own is accepted (and changes
    /// nothing), the other one is a 422.
    #[schema(value_type = Option<EnvironmentOut>)]
    pub entorno: Option<String>,
    /// `activa` or `pausada`.
    #[schema(pattern = "^(activa|pausada)$")]
    pub estado: Option<String>,
    /// The `version` the change is based on; another one is a 409.
    pub version_esperada: Option<i64>,
    /// Replaces a broker destination's credentials; `null` removes them.
    /// Changing `url` to a webhook removes them too.
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<Credenciales>)]
    pub credenciales: Option<Option<Credenciales>>,
    /// 1–10 000 attempts a second; `null` removes the limit.
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<i64>, minimum = 1, maximum = 10000)]
    pub max_por_segundo: Option<Option<i64>>,
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
    pub suscripcion: SubscriptionOut,
    pub secreto: Secreto,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct SubscriptionList {
    pub suscripciones: Vec<SubscriptionOut>,
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListQuery {
    /// Comma list of states; default `activa,pausada,suspendida`.
    #[param(
        pattern = "^(activa|pausada|suspendida|eliminada)(,(activa|pausada|suspendida|eliminada))*$"
    )]
    pub estado: Option<String>,
}

mod answer;
pub use answer::*;
