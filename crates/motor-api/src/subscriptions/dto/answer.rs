//! A subscription as answers show it, built from the domain's types.

use motor_domain::{
    contract::{Contract, Environment, Ordering},
    signature::SigningProfile,
    subscription::{Subscription, SubscriptionKey, SubscriptionState, SuspensionReason},
    time::{serde_opt_ts, serde_ts, Timestamp},
    AppId, InstanceId,
};
use serde::Serialize;
use utoipa::ToSchema;

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
    /// Whether deliveries go out one at a time per lane: `true` for `orden`
    /// `instancia` and `clave`, `false` for `ninguno`.
    pub ordenado: bool,
    /// `clave`: one at a time per (instance, `orden_clave`), keys in
    /// parallel. Absent = what `ordenado` says (`true`: `instancia`,
    /// `false`: `ninguno`), left out so those answers read as before.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub orden: Option<OrderingOut>,
    /// The signing profile of its deliveries: `mw-v1` (the default),
    /// `t-v1` or `standard-webhooks`.
    pub firma: SigningProfileOut,
    /// The product contract its deliveries follow; absent = `motor` (the
    /// default, left out so `motor` answers read as before).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub contrato: Option<ContractOut>,
    /// The environment whose events it receives, fixed at creation;
    /// absent = `live` (the default, left out so `live` answers read as
    /// before).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub entorno: Option<EnvironmentOut>,
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
            ordenado: s.ordering.is_ordered(),
            orden: OrderingOut::unless_ordenado_says(s.ordering),
            firma: s.signature.into(),
            contrato: ContractOut::unless_motor(s.contract),
            entorno: EnvironmentOut::unless_live(s.environment),
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
    /// The API key it is bound to was revoked (a contract that cancels on
    /// deactivation: its pending deliveries ended `cancelada`).
    #[serde(rename = "clave_revocada")]
    KeyRevoked,
    /// The API key it is bound to passed its `vence_en` (as
    /// `clave_revocada`).
    #[serde(rename = "clave_vencida")]
    KeyExpired,
    /// The API key it is bound to lacks the read scope an app's catalogue
    /// change (`PUT /v1/admin/apps/{id}/event-types`) now maps a type it
    /// selects to (as `clave_revocada`).
    #[serde(rename = "clave_sin_permiso")]
    KeyUnderScoped,
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

/// An environment (`entorno`, Asixto's `environment`): an event reaches
/// only subscriptions of its own.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[schema(as = Entorno)]
pub enum EnvironmentOut {
    /// The default.
    #[serde(rename = "live")]
    Live,
    #[serde(rename = "test")]
    Test,
}

impl From<Environment> for EnvironmentOut {
    fn from(e: Environment) -> Self {
        match e {
            Environment::Live => Self::Live,
            Environment::Test => Self::Test,
        }
    }
}
/// A subscription's ordering (`orden`, docs/CONTRACTS.md).
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[schema(as = Orden)]
pub enum OrderingOut {
    /// One at a time per (subscription, instance), in `seq` order
    /// (`ordenado: true`).
    #[serde(rename = "instancia")]
    Instance,
    /// One at a time per (subscription, instance, `orden_clave`), in `seq`
    /// order; keys in parallel; events without a key in the instance's
    /// lane.
    #[serde(rename = "clave")]
    Key,
    /// No order; in parallel (`ordenado: false`).
    #[serde(rename = "ninguno")]
    Unordered,
}

impl From<Ordering> for OrderingOut {
    fn from(o: Ordering) -> Self {
        match o {
            Ordering::Instance => Self::Instance,
            Ordering::Key => Self::Key,
            Ordering::Unordered => Self::Unordered,
        }
    }
}

impl EnvironmentOut {
    /// `None` for `live`: answers leave the default out.
    pub fn unless_live(e: Environment) -> Option<Self> {
        (e != Environment::Live).then(|| e.into())
    }
}

impl OrderingOut {
    /// `None` unless `clave`: `ordenado` tells the other two.
    pub fn unless_ordenado_says(o: Ordering) -> Option<Self> {
        (o == Ordering::Key).then(|| o.into())
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
            SuspensionReason::KeyRevoked => Self::KeyRevoked,
            SuspensionReason::KeyExpired => Self::KeyExpired,
            SuspensionReason::KeyUnderScoped => Self::KeyUnderScoped,
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
            ordering: Ordering::Instance,
            signature: SigningProfile::MwV1,
            contract: Contract::Motor,
            environment: Environment::Live,
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
        // `live` is left out too; `test` follows `contrato`.
        assert!(json.get("entorno").is_none());
        let json = serde_json::to_value(SubscriptionOut::from(Subscription {
            contract: Contract::Asixto,
            environment: Environment::Test,
            ..s.clone()
        }))
        .unwrap();
        assert_eq!(json["entorno"], "test");
        let keys: Vec<&String> = json.as_object().unwrap().keys().collect();
        let at = keys.iter().position(|k| *k == "entorno").unwrap();
        assert_eq!(keys[at - 1], "contrato");
        // `orden` only for `clave`, right after `ordenado`.
        assert!(json.get("orden").is_none());
        let ninguno = serde_json::to_value(SubscriptionOut::from(Subscription {
            ordering: Ordering::Unordered,
            ..s.clone()
        }))
        .unwrap();
        assert!(ninguno.get("orden").is_none());
        assert_eq!(ninguno["ordenado"], false);
        let clave = serde_json::to_value(SubscriptionOut::from(Subscription {
            ordering: Ordering::Key,
            ..s.clone()
        }))
        .unwrap();
        assert_eq!(
            (&clave["ordenado"], &clave["orden"]),
            (&true.into(), &"clave".into())
        );
        let keys: Vec<&String> = clave.as_object().unwrap().keys().collect();
        let at = keys.iter().position(|k| *k == "orden").unwrap();
        assert_eq!(keys[at - 1], "ordenado");
    }
}
