//! What reconciliation finds: work Motor accepted that should be moving and
//! is not. The engine's periodic job, `motor doctor` and the operator API
//! show the same [`Report`].

use serde::{Deserialize, Serialize};

use crate::time::{serde_ts, Timestamp};

/// The motivo of the alerts reconciliation opens.
pub const RECONCILE_REASON: &str = "reconciliacion";

/// Thresholds past which work counts as stuck.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Thresholds {
    /// A due `pendiente` delivery with no live job (no lease) for this long.
    pub pendiente_segundos: u64,
    /// An ordered lane whose head has been the same delivery for this long.
    pub carril_segundos: u64,
    /// An outbox row not published for this long.
    pub outbox_segundos: u64,
}

impl Default for Thresholds {
    fn default() -> Self {
        Self {
            pendiente_segundos: 300,
            carril_segundos: 900,
            outbox_segundos: 60,
        }
    }
}

/// A due `pendiente` delivery nothing is working on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StrandedDelivery {
    pub delivery_id: String,
    pub suscripcion_id: String,
    pub app_id: String,
    pub instancia_id: String,
    pub seq: i64,
    /// When it was due.
    #[serde(with = "serde_ts")]
    pub vencida_en: Timestamp,
}

/// An ordered lane whose head has not moved.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StalledLane {
    pub suscripcion_id: String,
    pub app_id: String,
    pub instancia_id: String,
    /// `live` or the replay's id.
    pub carril: String,
    /// The head: the lowest open seq of the lane.
    pub delivery_id: String,
    pub seq: i64,
    pub intentos: i32,
    pub ultimo_error: Option<String>,
    /// Since when this delivery has been the lane's head (as reconciliation
    /// observed it).
    #[serde(with = "serde_ts")]
    pub cabeza_desde: Timestamp,
}

/// The outbox is behind: rows older than the threshold.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OutboxBacklog {
    /// Rows older than the threshold (counted up to 100 000).
    pub filas: i64,
    pub antiguedad_segundos: f64,
}

/// One reconciliation pass.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// `true` when nothing is stuck.
    pub ok: bool,
    pub umbrales: Thresholds,
    pub pendientes_sin_trabajo: Vec<StrandedDelivery>,
    pub carriles_detenidos: Vec<StalledLane>,
    pub outbox_atrasado: Option<OutboxBacklog>,
}

impl Report {
    pub fn new(
        umbrales: Thresholds,
        pendientes_sin_trabajo: Vec<StrandedDelivery>,
        carriles_detenidos: Vec<StalledLane>,
        outbox_atrasado: Option<OutboxBacklog>,
    ) -> Self {
        Self {
            ok: pendientes_sin_trabajo.is_empty()
                && carriles_detenidos.is_empty()
                && outbox_atrasado.is_none(),
            umbrales,
            pendientes_sin_trabajo,
            carriles_detenidos,
            outbox_atrasado,
        }
    }

    /// The subscriptions with stuck work, with an operator-readable
    /// description of it (the alert's `detalle`).
    pub fn by_subscription(&self) -> Vec<(String, String, String)> {
        let mut out: Vec<(String, String, usize, usize)> = Vec::new();
        fn entry(out: &mut Vec<(String, String, usize, usize)>, sub: &str, app: &str) -> usize {
            match out.iter().position(|(s, ..)| s == sub) {
                Some(i) => i,
                None => {
                    out.push((sub.to_owned(), app.to_owned(), 0, 0));
                    out.len() - 1
                }
            }
        }
        for d in &self.pendientes_sin_trabajo {
            let i = entry(&mut out, &d.suscripcion_id, &d.app_id);
            out[i].2 += 1;
        }
        for l in &self.carriles_detenidos {
            let i = entry(&mut out, &l.suscripcion_id, &l.app_id);
            out[i].3 += 1;
        }
        out.into_iter()
            .map(|(sub, app, pendientes, carriles)| {
                let detalle = format!(
                    "{pendientes} entregas pendientes sin trabajo (más de {} s); \
                     {carriles} carriles detenidos (más de {} s)",
                    self.umbrales.pendiente_segundos, self.umbrales.carril_segundos
                );
                (sub, app, detalle)
            })
            .collect()
    }
}
