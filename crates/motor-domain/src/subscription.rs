//! Subscriptions: where an app's events go, and the rules their fields
//! obey. The API parses requests into [`NewSubscription`] and
//! [`SubscriptionChanges`]; the store keeps [`Subscription`]; the delivery
//! engine asks [`Subscription::covers`] which events fan out to it.

use serde::{Deserialize, Serialize};

use crate::{
    destination::Destination,
    error::FieldError,
    event::EventType,
    ids::{AppId, InstanceId},
    operator::parse_name,
    secret::SigningKeyId,
    signature::SigningProfile,
    time::{serde_ts, Timestamp},
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
// Two domain types are called `Estado`: each needs its own OpenAPI name.
#[cfg_attr(feature = "openapi", schema(as = SubscriptionState))]
pub enum Estado {
    Activa,
    Pausada,
    Suspendida,
    Eliminada,
}

impl Estado {
    pub const fn as_str(self) -> &'static str {
        match self {
            Estado::Activa => "activa",
            Estado::Pausada => "pausada",
            Estado::Suspendida => "suspendida",
            Estado::Eliminada => "eliminada",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        [
            Estado::Activa,
            Estado::Pausada,
            Estado::Suspendida,
            Estado::Eliminada,
        ]
        .into_iter()
        .find(|e| e.as_str() == s)
    }
}

/// Why the engine suspended a subscription.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub enum Motivo {
    #[serde(rename = "rechazo_401")]
    Rechazo401,
    #[serde(rename = "rechazo_403")]
    Rechazo403,
    DestinoNoPermitido,
    DestinoBloqueado,
    SinSecreto,
    /// A broker refused the subscription's `credenciales`.
    RechazoCredenciales,
    /// Every attempt failed for `webhooks.desactivar_tras_horas` and at
    /// least `webhooks.desactivar_tras_fallos` attempts in a row.
    FallosSostenidos,
}

impl Motivo {
    pub const ALL: [Motivo; 7] = [
        Motivo::Rechazo401,
        Motivo::Rechazo403,
        Motivo::DestinoNoPermitido,
        Motivo::DestinoBloqueado,
        Motivo::SinSecreto,
        Motivo::RechazoCredenciales,
        Motivo::FallosSostenidos,
    ];

    pub const fn as_str(self) -> &'static str {
        match self {
            Motivo::Rechazo401 => "rechazo_401",
            Motivo::Rechazo403 => "rechazo_403",
            Motivo::DestinoNoPermitido => "destino_no_permitido",
            Motivo::DestinoBloqueado => "destino_bloqueado",
            Motivo::SinSecreto => "sin_secreto",
            Motivo::RechazoCredenciales => "rechazo_credenciales",
            Motivo::FallosSostenidos => "fallos_sostenidos",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Motivo::ALL.into_iter().find(|m| m.as_str() == s)
    }
}

/// A signing key as the API shows it: never its value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Clave {
    pub key_id: SigningKeyId,
    #[serde(with = "serde_ts")]
    #[cfg_attr(feature = "openapi", schema(value_type = String, format = DateTime))]
    pub creado_en: Timestamp,
    /// Set only while a rotation retires this key.
    #[serde(with = "serde_opt_ts")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>, format = DateTime, required = true))]
    pub vence_en: Option<Timestamp>,
}

/// A subscription as the API shows it. Field order is the order on the wire.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Subscription {
    pub id: SubscriptionId,
    /// The app that owns it.
    #[cfg_attr(feature = "openapi", schema(value_type = String, format = Uuid))]
    pub cliente_id: AppId,
    pub nombre: String,
    pub url: String,
    /// Whether the subscription holds broker `credenciales` (sealed; never
    /// shown).
    pub credenciales: bool,
    /// Empty: every instance of the app.
    #[cfg_attr(feature = "openapi", schema(value_type = Vec<uuid::Uuid>))]
    pub instancias: Vec<InstanceId>,
    /// Empty: every event type.
    pub tipos: Vec<String>,
    pub ordenado: bool,
    /// The signing profile of its deliveries: `mw-v1` (the default),
    /// `t-v1` or `standard-webhooks`.
    pub firma: SigningProfile,
    /// At most this many attempts a second (1–10 000) across every lane
    /// and every Motor process; `null` = no limit.
    #[cfg_attr(
        feature = "openapi",
        schema(required = true, minimum = 1, maximum = 10000)
    )]
    pub max_por_segundo: Option<i64>,
    pub estado: Estado,
    /// Why the engine suspended it; `null` unless `suspendida`.
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub motivo: Option<Motivo>,
    #[serde(with = "serde_opt_ts")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>, format = DateTime, required = true))]
    pub suspendida_en: Option<Timestamp>,
    pub version: i64,
    pub claves: Vec<Clave>,
    pub pendientes: i64,
    pub fallidas: i64,
    #[serde(with = "serde_ts")]
    #[cfg_attr(feature = "openapi", schema(value_type = String, format = DateTime))]
    pub creada_en: Timestamp,
    #[serde(with = "serde_ts")]
    #[cfg_attr(feature = "openapi", schema(value_type = String, format = DateTime))]
    pub actualizada_en: Timestamp,
}

impl Subscription {
    /// Whether an event of `event_type` on `instance` fans out to this
    /// subscription (its state decides whether it is sent now, later or
    /// never).
    pub fn covers(&self, instance: InstanceId, event_type: &str) -> bool {
        (self.instancias.is_empty() || self.instancias.contains(&instance))
            && (self.tipos.is_empty() || self.tipos.iter().any(|t| t == event_type))
    }
}

/// A validated create request.
#[derive(Debug, Clone, PartialEq)]
pub struct NewSubscription {
    pub nombre: String,
    pub url: Destination,
    pub instancias: Vec<InstanceId>,
    pub tipos: Vec<EventType>,
    pub ordenado: bool,
    pub firma: SigningProfile,
    pub max_por_segundo: Option<i64>,
}

/// A validated `PATCH`: `None` leaves a field as it is.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SubscriptionChanges {
    pub nombre: Option<String>,
    pub url: Option<Destination>,
    pub instancias: Option<Vec<InstanceId>>,
    pub tipos: Option<Vec<EventType>>,
    pub ordenado: Option<bool>,
    pub firma: Option<SigningProfile>,
    pub estado: Option<Estado>,
    pub version_esperada: Option<i64>,
}

/// `max_por_segundo`: 1–10 000 attempts a second.
pub const MAX_POR_SEGUNDO: std::ops::RangeInclusive<i64> = 1..=10_000;

pub fn parse_max_por_segundo(n: i64) -> Result<i64, FieldError> {
    if MAX_POR_SEGUNDO.contains(&n) {
        Ok(n)
    } else {
        Err(FieldError::invalid(
            "body.max_por_segundo",
            "must be a whole number from 1 to 10000, or null (no limit)",
        ))
    }
}

pub fn parse_nombre(raw: &str) -> Result<String, FieldError> {
    parse_name(raw, "body.nombre")
}

pub fn parse_url(raw: &str) -> Result<Destination, FieldError> {
    Destination::parse(raw, "body.url")
}

/// Up to 200 instance ids, repeats dropped. Whether they belong to the app
/// and to the caller's key is checked by the API against the store.
pub fn parse_instancias(raw: &[String]) -> Result<Vec<InstanceId>, FieldError> {
    if raw.len() > MAX_INSTANCES {
        return Err(FieldError::invalid(
            "body.instancias",
            format!("at most {MAX_INSTANCES} instances, got {}", raw.len()),
        ));
    }
    let mut out: Vec<InstanceId> = Vec::with_capacity(raw.len());
    for (i, s) in raw.iter().enumerate() {
        let id: InstanceId = s.parse().map_err(|_| {
            FieldError::invalid(format!("body.instancias[{i}]"), "must be an instance id")
        })?;
        if !out.contains(&id) {
            out.push(id);
        }
    }
    Ok(out)
}

/// Up to 50 event types, repeats dropped.
pub fn parse_tipos(raw: &[String]) -> Result<Vec<EventType>, FieldError> {
    if raw.len() > MAX_TYPES {
        return Err(FieldError::invalid(
            "body.tipos",
            format!("at most {MAX_TYPES} event types, got {}", raw.len()),
        ));
    }
    let mut out: Vec<EventType> = Vec::with_capacity(raw.len());
    for (i, s) in raw.iter().enumerate() {
        let t =
            EventType::parse(s).map_err(|m| FieldError::invalid(format!("body.tipos[{i}]"), m))?;
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
            format!("body.tipos[{i}]"),
            "not in this app's catalogue of event types",
        )),
        None => Ok(()),
    }
}

/// A signing profile by its wire spelling, exactly: `mw-v1`, `t-v1` or
/// `standard-webhooks`.
pub fn parse_firma(raw: &str) -> Result<SigningProfile, FieldError> {
    SigningProfile::parse(raw).ok_or_else(|| {
        FieldError::invalid("body.firma", "must be mw-v1, t-v1 or standard-webhooks")
    })
}

/// A `PATCH` may set `activa` or `pausada`; suspension and deletion belong
/// to the engine and to `DELETE`.
pub fn parse_estado_patch(raw: &str) -> Result<Estado, FieldError> {
    match Estado::parse(raw) {
        Some(e @ (Estado::Activa | Estado::Pausada)) => Ok(e),
        _ => Err(FieldError::invalid(
            "body.estado",
            "must be activa or pausada",
        )),
    }
}

pub(crate) use crate::time::serde_opt_ts;

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(n: usize) -> Vec<String> {
        (0..n).map(|_| InstanceId::new().to_string()).collect()
    }

    #[test]
    fn instancias_boundaries() {
        assert_eq!(parse_instancias(&ids(200)).unwrap().len(), 200);
        assert_eq!(
            parse_instancias(&ids(201)).unwrap_err().campo,
            "body.instancias"
        );
        let mut bad = ids(5);
        bad[3] = "x".into();
        assert_eq!(
            parse_instancias(&bad).unwrap_err().campo,
            "body.instancias[3]"
        );
        let one = ids(1);
        let twice = vec![one[0].clone(), one[0].clone()];
        assert_eq!(parse_instancias(&twice).unwrap().len(), 1);
    }

    #[test]
    fn tipos_boundaries() {
        let tipos: Vec<String> = (0..50).map(|i| format!("t.{i}")).collect();
        assert_eq!(parse_tipos(&tipos).unwrap().len(), 50);
        let mut over = tipos.clone();
        over.push("t.50".into());
        assert_eq!(parse_tipos(&over).unwrap_err().campo, "body.tipos");
        assert_eq!(
            parse_tipos(&["a".into(), "".into()]).unwrap_err().campo,
            "body.tipos[1]"
        );
    }

    #[test]
    fn catalogue() {
        let tipos = parse_tipos(&["a".into(), "b".into()]).unwrap();
        assert!(check_catalogue(&tipos, None).is_ok());
        assert!(check_catalogue(&tipos, Some(&["a".into(), "b".into(), "c".into()])).is_ok());
        assert_eq!(
            check_catalogue(&tipos, Some(&["a".into()]))
                .unwrap_err()
                .campo,
            "body.tipos[1]"
        );
    }

    #[test]
    fn estado() {
        assert_eq!(parse_estado_patch("activa").unwrap(), Estado::Activa);
        assert_eq!(parse_estado_patch("pausada").unwrap(), Estado::Pausada);
        for bad in ["suspendida", "eliminada", "Activa", ""] {
            assert_eq!(parse_estado_patch(bad).unwrap_err().campo, "body.estado");
        }
        for m in Motivo::ALL {
            assert_eq!(Motivo::parse(m.as_str()), Some(m));
            assert_eq!(serde_json::to_value(m).unwrap(), m.as_str());
        }
    }

    #[test]
    fn covers() {
        let a = InstanceId::new();
        let b = InstanceId::new();
        let now = crate::time::now_millis();
        let mut s = Subscription {
            id: SubscriptionId::new(),
            cliente_id: AppId::new(),
            nombre: "n".into(),
            url: "https://h.io/".into(),
            credenciales: false,
            instancias: vec![],
            tipos: vec![],
            ordenado: true,
            firma: SigningProfile::MwV1,
            max_por_segundo: None,
            estado: Estado::Activa,
            motivo: None,
            suspendida_en: None,
            version: 1,
            claves: vec![],
            pendientes: 0,
            fallidas: 0,
            creada_en: now,
            actualizada_en: now,
        };
        assert!(s.covers(a, "x") && s.covers(b, "y"));
        s.instancias = vec![a];
        s.tipos = vec!["x".into()];
        assert!(s.covers(a, "x"));
        assert!(!s.covers(b, "x") && !s.covers(a, "y"));
        let json = serde_json::to_value(&s).unwrap();
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
    }

    #[test]
    fn firma() {
        for p in SigningProfile::ALL {
            assert_eq!(parse_firma(p.as_str()).unwrap(), p);
        }
        for bad in ["", "MW-V1", "mw_v1", " t-v1", "standard_webhooks", "v1"] {
            assert_eq!(parse_firma(bad).unwrap_err().campo, "body.firma", "{bad:?}");
        }
    }
}
