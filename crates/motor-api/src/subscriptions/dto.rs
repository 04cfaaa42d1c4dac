//! The wire types of `/v1/subscriptions`: request bodies (with serde's
//! field rules) and answers (with their OpenAPI schemas).

use std::fmt;

use motor_app::subscriptions::{
    NewSubscriptionInput, RawCredentials, SubscriptionChange, WithSecret,
};
use motor_domain::{
    contract::Contract,
    secret::IssuedSecret,
    signature::SigningProfile,
    subscription::{Subscription, SubscriptionKey, SubscriptionState, SuspensionReason},
    time::{serde_opt_ts, serde_ts, Timestamp},
    AppId, InstanceId,
};
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
    /// Default `true`: per instance, in `seq` order.
    #[serde(default)]
    pub ordenado: Option<bool>,
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
            signature: b.firma,
            contract: b.contrato,
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
            signature: b.firma,
            contract: b.contrato,
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
    pub ordenado: Option<bool>,
    /// `mw-v1`, `t-v1` or `standard-webhooks`; applies from the next
    /// attempt, retries of pending deliveries included.
    #[schema(value_type = Option<crate::subscriptions::SigningProfileOut>)]
    pub firma: Option<String>,
    /// `motor`, `visito`, `asixto` or `standard-webhooks`; applies from the
    /// next attempt (its body, headers and signature). A pending delivery
    /// keeps the retry ladder it started with.
    #[schema(value_type = Option<ContractOut>)]
    pub contrato: Option<String>,
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

// ---- A subscription on the wire ------------------------------------------
//
// The domain crate knows no JSON and no OpenAPI: these are built from its
// types (`From`), and the snapshot and drift tests compare them with real
// answers.

/// A subscription as the API shows it. Field order is the order on the wire.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = Subscription)]
pub struct SubscriptionOut {
    pub id: SubscriptionIdOut,
    /// The app that owns it.
    #[schema(value_type = String, format = Uuid)]
    pub cliente_id: AppId,
    pub nombre: String,
    pub url: String,
    /// Whether the subscription holds broker `credenciales` (sealed; never
    /// shown).
    pub credenciales: bool,
    /// Empty: every instance of the app.
    #[schema(value_type = Vec<uuid::Uuid>)]
    pub instancias: Vec<InstanceId>,
    /// Empty: every event type.
    pub tipos: Vec<String>,
    pub ordenado: bool,
    /// The signing profile of its deliveries: `mw-v1` (the default),
    /// `t-v1` or `standard-webhooks`.
    pub firma: SigningProfileOut,
    /// The product contract its deliveries follow; absent = `motor` (the
    /// default, left out so `motor` answers read as before).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub contrato: Option<ContractOut>,
    /// At most this many attempts a second (1–10 000) across every lane
    /// and every Motor process; `null` = no limit.
    #[schema(required = true, minimum = 1, maximum = 10000)]
    pub max_por_segundo: Option<i64>,
    pub estado: SubscriptionStateOut,
    /// Why the engine suspended it; `null` unless `suspendida`.
    #[schema(required = true)]
    pub motivo: Option<SuspensionReasonOut>,
    #[serde(with = "serde_opt_ts")]
    #[schema(value_type = Option<String>, format = DateTime, required = true)]
    pub suspendida_en: Option<Timestamp>,
    pub version: i64,
    pub claves: Vec<SubscriptionKeyOut>,
    pub pendientes: i64,
    pub fallidas: i64,
    #[serde(with = "serde_ts")]
    #[schema(value_type = String, format = DateTime)]
    pub creada_en: Timestamp,
    #[serde(with = "serde_ts")]
    #[schema(value_type = String, format = DateTime)]
    pub actualizada_en: Timestamp,
}

impl From<Subscription> for SubscriptionOut {
    fn from(s: Subscription) -> Self {
        Self {
            id: SubscriptionIdOut(*s.id.as_uuid()),
            cliente_id: s.app_id,
            nombre: s.name,
            url: s.url,
            credenciales: s.has_credentials,
            instancias: s.instances,
            tipos: s.event_types,
            ordenado: s.ordered,
            firma: s.signature.into(),
            contrato: ContractOut::unless_motor(s.contract),
            max_por_segundo: s.max_per_second,
            estado: s.state.into(),
            motivo: s.reason.map(Into::into),
            suspendida_en: s.suspended_at,
            version: s.version,
            claves: s.keys.into_iter().map(Into::into).collect(),
            pendientes: s.pending,
            fallidas: s.failed,
            creada_en: s.created_at,
            actualizada_en: s.updated_at,
        }
    }
}

/// A signing key as the API shows it: never its value.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = Clave)]
pub struct SubscriptionKeyOut {
    pub key_id: SigningKeyIdOut,
    #[serde(with = "serde_ts")]
    #[schema(value_type = String, format = DateTime)]
    pub creado_en: Timestamp,
    /// Set only while a rotation retires this key.
    #[serde(with = "serde_opt_ts")]
    #[schema(value_type = Option<String>, format = DateTime, required = true)]
    pub vence_en: Option<Timestamp>,
}

impl From<SubscriptionKey> for SubscriptionKeyOut {
    fn from(k: SubscriptionKey) -> Self {
        Self {
            key_id: SigningKeyIdOut(k.key_id.as_str().to_owned()),
            creado_en: k.created_at,
            vence_en: k.expires_at,
        }
    }
}

/// A subscription's state. Only the engine suspends; only `DELETE`
/// eliminates; a `PATCH` moves between `activa` and `pausada` (and
/// reactivates a suspended one).
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = SubscriptionState)]
pub enum SubscriptionStateOut {
    #[serde(rename = "activa")]
    Active,
    #[serde(rename = "pausada")]
    Paused,
    #[serde(rename = "suspendida")]
    Suspended,
    #[serde(rename = "eliminada")]
    Deleted,
}

/// Why the engine suspended a subscription.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = Motivo)]
pub enum SuspensionReasonOut {
    #[serde(rename = "rechazo_401")]
    Rejected401,
    #[serde(rename = "rechazo_403")]
    Rejected403,
    #[serde(rename = "destino_no_permitido")]
    DestinationNotAllowed,
    #[serde(rename = "destino_bloqueado")]
    DestinationBlocked,
    #[serde(rename = "sin_secreto")]
    NoSecret,
    /// A broker refused the subscription's `credenciales`.
    #[serde(rename = "rechazo_credenciales")]
    CredentialsRejected,
    /// Every attempt failed for `webhooks.desactivar_tras_horas` and at
    /// least `webhooks.desactivar_tras_fallos` attempts in a row.
    #[serde(rename = "fallos_sostenidos")]
    SustainedFailures,
}

/// A subscription's signing profile (`firma`).
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = SigningProfile)]
pub enum SigningProfileOut {
    #[serde(rename = "mw-v1")]
    MwV1,
    #[serde(rename = "t-v1")]
    TV1,
    #[serde(rename = "standard-webhooks")]
    StandardWebhooks,
}

/// A product contract (`contrato`, docs/CONTRACTS.md): which product's
/// webhook document a receiver is written from.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[schema(as = Contrato)]
pub enum ContractOut {
    /// The WhatsApp product's contract (X-MW-* headers, Motor's envelope).
    #[serde(rename = "motor")]
    Motor,
    /// Visito's M2M webhooks: `eventId` envelope, `X-Visito-*` headers.
    #[serde(rename = "visito")]
    Visito,
    /// Asixto's webhooks: `id`/`created`/`environment` envelope,
    /// `Asixto-Signature`.
    #[serde(rename = "asixto")]
    Asixto,
    /// Motor's envelope under the Standard Webhooks 1.0.0 headers.
    #[serde(rename = "standard-webhooks")]
    StandardWebhooks,
}

impl From<Contract> for ContractOut {
    fn from(c: Contract) -> Self {
        match c {
            Contract::Motor => Self::Motor,
            Contract::Visito => Self::Visito,
            Contract::Asixto => Self::Asixto,
            Contract::StandardWebhooks => Self::StandardWebhooks,
        }
    }
}

impl ContractOut {
    /// `None` for `motor`: answers leave the default out.
    pub fn unless_motor(c: Contract) -> Option<Self> {
        (c != Contract::Motor).then(|| c.into())
    }
}

/// The public id of a signing secret, sent as `X-MW-Key-Id`.
#[derive(Debug, Serialize, ToSchema)]
#[serde(transparent)]
#[schema(value_type = String, example = "whk_5f0c6a4e9b1d2c3a4b5c6d7e")]
#[schema(as = SigningKeyId)]
pub struct SigningKeyIdOut(String);

/// A subscription's id.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = SubscriptionId, value_type = String, format = Uuid)]
pub struct SubscriptionIdOut(pub uuid::Uuid);

impl From<SubscriptionState> for SubscriptionStateOut {
    fn from(s: SubscriptionState) -> Self {
        match s {
            SubscriptionState::Active => Self::Active,
            SubscriptionState::Paused => Self::Paused,
            SubscriptionState::Suspended => Self::Suspended,
            SubscriptionState::Deleted => Self::Deleted,
        }
    }
}

impl From<SuspensionReason> for SuspensionReasonOut {
    fn from(r: SuspensionReason) -> Self {
        match r {
            SuspensionReason::Rejected401 => Self::Rejected401,
            SuspensionReason::Rejected403 => Self::Rejected403,
            SuspensionReason::DestinationNotAllowed => Self::DestinationNotAllowed,
            SuspensionReason::DestinationBlocked => Self::DestinationBlocked,
            SuspensionReason::NoSecret => Self::NoSecret,
            SuspensionReason::CredentialsRejected => Self::CredentialsRejected,
            SuspensionReason::SustainedFailures => Self::SustainedFailures,
        }
    }
}

impl From<SigningProfile> for SigningProfileOut {
    fn from(p: SigningProfile) -> Self {
        match p {
            SigningProfile::MwV1 => Self::MwV1,
            SigningProfile::TV1 => Self::TV1,
            SigningProfile::StandardWebhooks => Self::StandardWebhooks,
        }
    }
}

#[cfg(test)]
mod tests {
    use motor_domain::{signature::SigningProfile, subscription::SubscriptionId};

    use super::*;

    #[test]
    fn a_subscription_keeps_its_wire_names_and_order() {
        let now = motor_domain::time::now_millis();
        let s = Subscription {
            id: SubscriptionId::new(),
            app_id: AppId::new(),
            name: "n".into(),
            url: "https://h.io/".into(),
            has_credentials: false,
            instances: vec![],
            event_types: vec![],
            ordered: true,
            signature: SigningProfile::MwV1,
            contract: Contract::Motor,
            max_per_second: None,
            state: SubscriptionState::Active,
            reason: None,
            suspended_at: None,
            version: 1,
            keys: vec![],
            pending: 0,
            failed: 0,
            created_at: now,
            updated_at: now,
        };
        let json = serde_json::to_value(SubscriptionOut::from(s.clone())).unwrap();
        let keys: Vec<&str> = json
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            keys,
            [
                "id",
                "cliente_id",
                "nombre",
                "url",
                "credenciales",
                "instancias",
                "tipos",
                "ordenado",
                "firma",
                "max_por_segundo",
                "estado",
                "motivo",
                "suspendida_en",
                "version",
                "claves",
                "pendientes",
                "fallidas",
                "creada_en",
                "actualizada_en"
            ]
        );
        assert_eq!(json["motivo"], serde_json::Value::Null);
        assert_eq!(json["firma"], "mw-v1");
        assert_eq!(json["estado"], "activa");
        for r in SuspensionReason::ALL {
            assert_eq!(
                serde_json::to_value(SuspensionReasonOut::from(r)).unwrap(),
                r.as_str()
            );
        }
        // `motor` is left out (answers read as before); any other
        // contract follows `firma`, by its wire name.
        assert!(json.get("contrato").is_none());
        for c in [
            Contract::Visito,
            Contract::Asixto,
            Contract::StandardWebhooks,
        ] {
            let json = serde_json::to_value(SubscriptionOut::from(Subscription {
                contract: c,
                ..s.clone()
            }))
            .unwrap();
            assert_eq!(json["contrato"], c.as_str());
            let keys: Vec<&String> = json.as_object().unwrap().keys().collect();
            let at = keys.iter().position(|k| *k == "contrato").unwrap();
            assert_eq!(keys[at - 1], "firma");
        }
    }
}
