//! Label sets. Every label's values are bounded: apps and topics are few,
//! error codes and tiers are closed sets, the per-subscription gauge
//! keeps only the top N (`pipeline::TOP_SUBSCRIPTIONS`), and instances and
//! event types only the busiest (`breakdown`).

use prometheus_client::encoding::EncodeLabelSet;

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct AppLabel {
    pub app_id: String,
}

/// A delivery's state (`entregada`, `fallida`, …) or a subscription's
/// (`activa`, `suspendida`, …).
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct StateLabel {
    pub estado: String,
}

/// An `ultimo_error` code (`http_503`, `timeout_agotada`, …).
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ErrorLabel {
    pub ultimo_error: String,
}

/// An attempt's outcome class: `2xx`, `3xx`, `4xx`, `5xx`, `1xx`,
/// `timeout`, `red` (connection, DNS, TLS), `destino` (the destination
/// rules or the subscription's secret/URL stopped it before sending),
/// `broker` (a broker's refusal).
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ClassLabel {
    pub clase: String,
}

/// A delay tier (`1s`, `5s`, `30s`, `2m`, `10m`, `1h`).
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct TierLabel {
    pub tier: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct SubscriptionLabel {
    pub subscription_id: String,
}

/// A consumer group and one of its topics.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ConsumerLabel {
    pub group: String,
    pub topic: String,
}

/// A kind of reconciliation finding (`pendiente_sin_trabajo`,
/// `carril_detenido`, `outbox_atrasado`).
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct KindLabel {
    pub tipo: String,
}

/// An instance id, or `other` (`breakdown`: the busiest ones only).
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct InstanceLabel {
    pub instance: String,
}

/// An event type, or `other` (`breakdown`: the busiest ones only).
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct TypeLabel {
    pub event_type: String,
}

/// The running build (`motor_build_info`).
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct VersionLabel {
    pub version: String,
}
