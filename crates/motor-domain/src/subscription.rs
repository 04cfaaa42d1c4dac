//! Subscriptions: where an app's events go, and the rules their fields
//! obey. The API parses requests into [`NewSubscription`] and
//! [`SubscriptionChanges`]; the store keeps [`Subscription`]; the delivery
//! engine asks [`Subscription::covers`] which events fan out to it.

use crate::{
    contract::{Contract, Environment, Ordering},
    destination::Destination,
    error::FieldError,
    event::EventType,
    ids::{AppId, InstanceId},
    operator::parse_name,
    secret::SigningKeyId,
    signature::SigningProfile,
    time::Timestamp,
};

pub const MAX_INSTANCES: usize = 200;
pub const MAX_TYPES: usize = 50;

crate::ids::uuid_id!(
    /// A subscription's id.
    SubscriptionId
);

/// A subscription's state. Only the engine suspends; only `DELETE`
/// eliminates; a `PATCH` moves between `activa` and `pausada` (and
/// reactivates a suspended one).
/// Its wire spelling is [`SubscriptionState::as_str`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SubscriptionState {
    Active,
    Paused,
    Suspended,
    Deleted,
}

impl SubscriptionState {
    pub const fn as_str(self) -> &'static str {
        match self {
            SubscriptionState::Active => "activa",
            SubscriptionState::Paused => "pausada",
            SubscriptionState::Suspended => "suspendida",
            SubscriptionState::Deleted => "eliminada",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        [
            SubscriptionState::Active,
            SubscriptionState::Paused,
            SubscriptionState::Suspended,
            SubscriptionState::Deleted,
        ]
        .into_iter()
        .find(|e| e.as_str() == s)
    }
}

/// Why the engine suspended a subscription.
/// Its wire spelling is [`SuspensionReason::as_str`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SuspensionReason {
    Rejected401,
    Rejected403,
    DestinationNotAllowed,
    DestinationBlocked,
    NoSecret,
    /// A broker refused the subscription's `credenciales`.
    CredentialsRejected,
    /// Every attempt failed for `webhooks.desactivar_tras_horas` and at
    /// least `webhooks.desactivar_tras_fallos` attempts in a row.
    SustainedFailures,
    /// The API key it is bound to was revoked, under a contract that
    /// cancels on deactivation (Visito).
    KeyRevoked,
    /// The API key it is bound to passed its `vence_en`, under a contract
    /// that cancels on deactivation.
    KeyExpired,
    /// The API key it is bound to lacks the read scope the app's catalogue
    /// now maps a type it selects to, under a contract that cancels on
    /// deactivation.
    KeyUnderScoped,
}

impl SuspensionReason {
    pub const ALL: [SuspensionReason; 10] = [
        SuspensionReason::Rejected401,
        SuspensionReason::Rejected403,
        SuspensionReason::DestinationNotAllowed,
        SuspensionReason::DestinationBlocked,
        SuspensionReason::NoSecret,
        SuspensionReason::CredentialsRejected,
        SuspensionReason::SustainedFailures,
        SuspensionReason::KeyRevoked,
        SuspensionReason::KeyExpired,
        SuspensionReason::KeyUnderScoped,
    ];

    pub const fn as_str(self) -> &'static str {
        match self {
            SuspensionReason::Rejected401 => "rechazo_401",
            SuspensionReason::Rejected403 => "rechazo_403",
            SuspensionReason::DestinationNotAllowed => "destino_no_permitido",
            SuspensionReason::DestinationBlocked => "destino_bloqueado",
            SuspensionReason::NoSecret => "sin_secreto",
            SuspensionReason::CredentialsRejected => "rechazo_credenciales",
            SuspensionReason::SustainedFailures => "fallos_sostenidos",
            SuspensionReason::KeyRevoked => "clave_revocada",
            SuspensionReason::KeyExpired => "clave_vencida",
            SuspensionReason::KeyUnderScoped => "clave_sin_permiso",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        SuspensionReason::ALL.into_iter().find(|m| m.as_str() == s)
    }
}

/// A signing key as the API shows it: never its value.
#[derive(Debug, Clone, PartialEq)]
pub struct SubscriptionKey {
    pub key_id: SigningKeyId,
    pub created_at: Timestamp,
    /// Set only while a rotation retires this key.
    pub expires_at: Option<Timestamp>,
}

/// A subscription as the store keeps it (the API's `dto.rs` gives it its
/// wire shape).
#[derive(Debug, Clone, PartialEq)]
pub struct Subscription {
    pub id: SubscriptionId,
    /// The app that owns it.
    pub app_id: AppId,
    pub name: String,
    pub url: String,
    /// Whether the subscription holds broker credentials (sealed; never
    /// shown).
    pub has_credentials: bool,
    /// Empty: every instance of the app.
    pub instances: Vec<InstanceId>,
    /// Empty: every event type.
    pub event_types: Vec<String>,
    /// `orden`: `instancia`, `clave` or `ninguno` (`ordenado` is
    /// [`Ordering::is_ordered`]).
    pub ordering: Ordering,
    /// The signing profile of its deliveries.
    pub signature: SigningProfile,
    /// The product contract its deliveries follow (`contrato`).
    pub contract: Contract,
    /// The environment whose events it receives (`entorno`), fixed at
    /// creation.
    pub environment: Environment,
    /// At most this many attempts a second (1–10 000) across every lane
    /// and every Motor process; `None` = no limit.
    pub max_per_second: Option<i64>,
    pub state: SubscriptionState,
    /// Why the engine suspended it; `None` unless suspended.
    pub reason: Option<SuspensionReason>,
    pub suspended_at: Option<Timestamp>,
    pub version: i64,
    pub keys: Vec<SubscriptionKey>,
    /// Its `pendiente` and `fallida` deliveries.
    pub pending: i64,
    pub failed: i64,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

impl Subscription {
    /// Whether an event of `event_type` on `instance` in `environment`
    /// fans out to this subscription (its state decides whether it is sent
    /// now, later or never): the rule the fan-out's and replays' SQL
    /// applies. Environments never cross.
    pub fn covers(&self, instance: InstanceId, event_type: &str, environment: Environment) -> bool {
        self.environment == environment
            && (self.instances.is_empty() || self.instances.contains(&instance))
            && (self.event_types.is_empty() || self.event_types.iter().any(|t| t == event_type))
    }
}

/// A validated create request.
#[derive(Debug, Clone, PartialEq)]
pub struct NewSubscription {
    pub name: String,
    pub url: Destination,
    pub instances: Vec<InstanceId>,
    pub event_types: Vec<EventType>,
    /// Resolved: the one asked for, or the contract's default.
    pub ordering: Ordering,
    pub signature: SigningProfile,
    /// `None`: the app's contract.
    pub contract: Option<Contract>,
    /// Default `live`.
    pub environment: Environment,
    pub max_per_second: Option<i64>,
}

/// A validated `PATCH`: `None` leaves a field as it is.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SubscriptionChanges {
    pub name: Option<String>,
    pub url: Option<Destination>,
    pub instances: Option<Vec<InstanceId>>,
    pub event_types: Option<Vec<EventType>>,
    pub ordering: Option<Ordering>,
    pub signature: Option<SigningProfile>,
    pub contract: Option<Contract>,
    pub state: Option<SubscriptionState>,
    pub expected_version: Option<i64>,
}

/// `max_por_segundo`: 1–10 000 attempts a second.
pub const MAX_PER_SECOND: std::ops::RangeInclusive<i64> = 1..=10_000;

pub fn parse_max_per_second(n: i64) -> Result<i64, FieldError> {
    if MAX_PER_SECOND.contains(&n) {
        Ok(n)
    } else {
        Err(FieldError::invalid(
            "max_por_segundo",
            "must be a whole number from 1 to 10000, or null (no limit)",
        ))
    }
}

pub fn parse_subscription_name(raw: &str) -> Result<String, FieldError> {
    parse_name(raw, "nombre")
}

pub fn parse_url(raw: &str) -> Result<Destination, FieldError> {
    Destination::parse(raw, "url")
}

/// Up to 200 instance ids, repeats dropped. Whether they belong to the app
/// and to the caller's key is checked by the API against the store.
pub fn parse_instances(raw: &[String]) -> Result<Vec<InstanceId>, FieldError> {
    if raw.len() > MAX_INSTANCES {
        return Err(FieldError::invalid(
            "instancias",
            format!("at most {MAX_INSTANCES} instances, got {}", raw.len()),
        ));
    }
    let mut out: Vec<InstanceId> = Vec::with_capacity(raw.len());
    for (i, s) in raw.iter().enumerate() {
        let id: InstanceId = s.parse().map_err(|_| {
            FieldError::invalid(format!("instancias[{i}]"), "must be an instance id")
        })?;
        if !out.contains(&id) {
            out.push(id);
        }
    }
    Ok(out)
}

/// Up to 50 event types, repeats dropped.
pub fn parse_types(raw: &[String]) -> Result<Vec<EventType>, FieldError> {
    if raw.len() > MAX_TYPES {
        return Err(FieldError::invalid(
            "tipos",
            format!("at most {MAX_TYPES} event types, got {}", raw.len()),
        ));
    }
    let mut out: Vec<EventType> = Vec::with_capacity(raw.len());
    for (i, s) in raw.iter().enumerate() {
        let t = EventType::parse(s).map_err(|m| FieldError::invalid(format!("tipos[{i}]"), m))?;
        if !out.contains(&t) {
            out.push(t);
        }
    }
    Ok(out)
}

/// Checks `tipos` against an app's closed catalogue, when it has one.
pub fn check_catalogue(
    tipos: &[EventType],
    catalogue: Option<&[String]>,
) -> Result<(), FieldError> {
    let Some(catalogue) = catalogue else {
        return Ok(());
    };
    match tipos
        .iter()
        .position(|t| !catalogue.iter().any(|c| c == t.as_str()))
    {
        Some(i) => Err(FieldError::invalid(
            format!("tipos[{i}]"),
            "not in this app's catalogue of event types",
        )),
        None => Ok(()),
    }
}

/// A signing profile by its wire spelling, exactly: `mw-v1`, `t-v1` or
/// `standard-webhooks`.
pub fn parse_signature(raw: &str) -> Result<SigningProfile, FieldError> {
    SigningProfile::parse(raw)
        .ok_or_else(|| FieldError::invalid("firma", "must be mw-v1, t-v1 or standard-webhooks"))
}

/// A contract by its wire spelling, exactly (`motor`, `visito`, `asixto`,
/// `standard-webhooks`); anything else names `body.contrato`.
/// The ordering a create (`current: None`, `default` = its contract's) or
/// a change (`current`: the subscription's) asks for, from `orden` and the
/// older `ordenado` (`true` = `instancia`, `false` = `ninguno`). Both may
/// be sent when they agree (`ordenado: true` with `clave` does); a change
/// whose `ordenado` agrees with the current ordering keeps it (`true`
/// leaves a `clave` subscription `clave`). Errors name `orden` or
/// `ordenado`.
pub fn parse_ordering(
    orden: Option<&str>,
    ordered: Option<bool>,
    current: Option<Ordering>,
    default: Ordering,
) -> Result<Ordering, FieldError> {
    match (orden.map(Ordering::parse).transpose()?, ordered) {
        (Some(o), Some(b)) if o.is_ordered() != b => Err(FieldError::invalid(
            "ordenado",
            format!("contradicts orden {}", o.as_str()),
        )),
        (Some(o), _) => Ok(o),
        (None, Some(b)) => Ok(match current {
            Some(c) if c.is_ordered() == b => c,
            _ => Ordering::from_ordered(b),
        }),
        (None, None) => Ok(current.unwrap_or(default)),
    }
}

pub fn parse_contract(raw: &str) -> Result<Contract, FieldError> {
    Contract::parse_field(raw, crate::contract::FIELD)
}

/// A `PATCH` may set `activa` or `pausada`; suspension and deletion belong
/// to the engine and to `DELETE`.
pub fn parse_state_patch(raw: &str) -> Result<SubscriptionState, FieldError> {
    match SubscriptionState::parse(raw) {
        Some(e @ (SubscriptionState::Active | SubscriptionState::Paused)) => Ok(e),
        _ => Err(FieldError::invalid("estado", "must be activa or pausada")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(n: usize) -> Vec<String> {
        (0..n).map(|_| InstanceId::new().to_string()).collect()
    }

    #[test]
    fn instances_boundaries() {
        assert_eq!(parse_instances(&ids(200)).unwrap().len(), 200);
        assert_eq!(parse_instances(&ids(201)).unwrap_err().field, "instancias");
        let mut bad = ids(5);
        bad[3] = "x".into();
        assert_eq!(parse_instances(&bad).unwrap_err().field, "instancias[3]");
        let one = ids(1);
        let twice = vec![one[0].clone(), one[0].clone()];
        assert_eq!(parse_instances(&twice).unwrap().len(), 1);
    }

    #[test]
    fn event_types_boundaries() {
        let tipos: Vec<String> = (0..50).map(|i| format!("t.{i}")).collect();
        assert_eq!(parse_types(&tipos).unwrap().len(), 50);
        let mut over = tipos.clone();
        over.push("t.50".into());
        assert_eq!(parse_types(&over).unwrap_err().field, "tipos");
        assert_eq!(
            parse_types(&["a".into(), "".into()]).unwrap_err().field,
            "tipos[1]"
        );
    }

    #[test]
    fn catalogue() {
        let tipos = parse_types(&["a".into(), "b".into()]).unwrap();
        assert!(check_catalogue(&tipos, None).is_ok());
        assert!(check_catalogue(&tipos, Some(&["a".into(), "b".into(), "c".into()])).is_ok());
        assert_eq!(
            check_catalogue(&tipos, Some(&["a".into()]))
                .unwrap_err()
                .field,
            "tipos[1]"
        );
    }

    #[test]
    fn state_patch() {
        assert_eq!(
            parse_state_patch("activa").unwrap(),
            SubscriptionState::Active
        );
        assert_eq!(
            parse_state_patch("pausada").unwrap(),
            SubscriptionState::Paused
        );
        for bad in ["suspendida", "eliminada", "Activa", ""] {
            assert_eq!(parse_state_patch(bad).unwrap_err().field, "estado");
        }
        for m in SuspensionReason::ALL {
            assert_eq!(SuspensionReason::parse(m.as_str()), Some(m));
        }
    }

    #[test]
    fn contract_names_its_field() {
        for c in Contract::ALL {
            assert_eq!(parse_contract(c.as_str()).unwrap(), c);
        }
        for bad in ["Motor", "visito ", "", "stripe", "standard_webhooks"] {
            let e = parse_contract(bad).unwrap_err();
            assert_eq!(e.field, "contrato", "{bad:?}");
            assert!(e
                .message
                .contains("motor, visito, asixto, standard-webhooks"));
        }
    }

    #[test]
    fn ordering_from_the_new_field_and_the_older_boolean() {
        use Ordering::*;
        let create = |o, b, d| parse_ordering(o, b, None, d);
        assert_eq!(create(None, None, Key), Ok(Key), "the contract's default");
        assert_eq!(create(None, Some(true), Key), Ok(Instance));
        assert_eq!(create(None, Some(false), Instance), Ok(Unordered));
        assert_eq!(create(Some("clave"), None, Instance), Ok(Key));
        assert_eq!(create(Some("clave"), Some(true), Unordered), Ok(Key));
        assert_eq!(create(Some("ninguno"), Some(false), Key), Ok(Unordered));
        for (o, b) in [("clave", false), ("instancia", false), ("ninguno", true)] {
            let e = create(Some(o), Some(b), Instance).unwrap_err();
            assert_eq!(e.field, "ordenado", "{o} {b}");
        }
        assert_eq!(
            create(Some("Clave"), None, Instance).unwrap_err().field,
            "orden"
        );
        let change = |o, b, c| parse_ordering(o, b, Some(c), Instance);
        assert_eq!(change(None, None, Key), Ok(Key));
        assert_eq!(change(None, Some(true), Key), Ok(Key), "agrees: kept");
        assert_eq!(change(None, Some(false), Key), Ok(Unordered));
        assert_eq!(change(None, Some(true), Unordered), Ok(Instance));
        assert_eq!(change(Some("instancia"), None, Key), Ok(Instance));
    }

    #[test]
    fn covers() {
        let a = InstanceId::new();
        let b = InstanceId::new();
        let now = crate::time::now_millis();
        let mut s = Subscription {
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
        let (live, test) = (Environment::Live, Environment::Test);
        assert!(s.covers(a, "x", live) && s.covers(b, "y", live));
        s.instances = vec![a];
        s.event_types = vec!["x".into()];
        assert!(s.covers(a, "x", live));
        assert!(!s.covers(b, "x", live) && !s.covers(a, "y", live));
        // Environments never cross, whatever else matches.
        for (subscription, event, covered) in [
            (live, live, true),
            (live, test, false),
            (test, test, true),
            (test, live, false),
        ] {
            s.environment = subscription;
            assert_eq!(
                s.covers(a, "x", event),
                covered,
                "{subscription:?} {event:?}"
            );
            s.instances = vec![];
            s.event_types = vec![];
            assert_eq!(s.covers(b, "y", event), covered);
            s.instances = vec![a];
            s.event_types = vec!["x".into()];
        }
    }

    #[test]
    fn signature() {
        for p in SigningProfile::ALL {
            assert_eq!(parse_signature(p.as_str()).unwrap(), p);
        }
        for bad in ["", "MW-V1", "mw_v1", " t-v1", "standard_webhooks", "v1"] {
            assert_eq!(parse_signature(bad).unwrap_err().field, "firma", "{bad:?}");
        }
    }
}
