//! The commands side's metrics (issue 32): commands accepted per class of
//! kind, claims, reports per outcome, heartbeats, what the sweeper ended
//! and the executors' long-polls in progress. Counted where each happens
//! (the API's handlers, the sweeper); each process counts its own.

use prometheus_client::{
    metrics::{counter::Counter, family::Family, gauge::Gauge},
    registry::Registry,
};

use crate::labels::{ClassLabel, KindLabel, StateLabel};

/// A command's class of kind as a label value: `envio` (a send),
/// `remota` (a remote operation), `control` (instance control).
pub const CLASSES: [&str; 3] = ["envio", "remota", "control"];

/// The sweeper's two endings as label values: `vencido` (`expires_at`
/// passed before a claim → `fallido`) and `reserva_vencida` (the lease ran
/// out while `ejecutando` → `ambiguo`).
pub const SWEEPS: [&str; 2] = ["vencido", "reserva_vencida"];

#[derive(Debug, Clone)]
pub struct Commands {
    /// New commands stored (not an `Idempotency-Key`'s repeat), per class.
    pub accepted: Family<ClassLabel, Counter>,
    /// Claims that made a command `ejecutando`.
    pub claims: Counter,
    /// Reports recorded, per reported status (`enviado`, `completado`,
    /// `fallido`, `ambiguo`, `en_cola`).
    pub reports: Family<StateLabel, Counter>,
    /// Leases extended by a heartbeat.
    pub heartbeats: Counter,
    /// Commands the sweeper ended, per ending ([`SWEEPS`]).
    pub swept: Family<KindLabel, Counter>,
    /// Executor long-polls in progress on this process.
    pub poll_waiters: Gauge,
}

impl Commands {
    pub(crate) fn register(registry: &mut Registry) -> Self {
        let commands = Self {
            accepted: Family::default(),
            claims: Counter::default(),
            reports: Family::default(),
            heartbeats: Counter::default(),
            swept: Family::default(),
            poll_waiters: Gauge::default(),
        };
        registry.register(
            "commands_accepted",
            "New commands stored, per class of kind (envio, remota, control).",
            commands.accepted.clone(),
        );
        registry.register(
            "command_claims",
            "Claims that made a command ejecutando.",
            commands.claims.clone(),
        );
        registry.register(
            "command_reports",
            "Executor reports recorded, per reported status.",
            commands.reports.clone(),
        );
        registry.register(
            "command_heartbeats",
            "Leases extended by an executor's heartbeat.",
            commands.heartbeats.clone(),
        );
        registry.register(
            "command_sweeps",
            "Commands the sweeper ended: vencido (fallido) or reserva_vencida (ambiguo).",
            commands.swept.clone(),
        );
        registry.register(
            "command_poll_waiters",
            "Executor long-polls in progress on this process.",
            commands.poll_waiters.clone(),
        );
        // Every known series from the start, at zero: a rate over a
        // series that appears late misses its first counts.
        for clase in CLASSES {
            let _ = commands.accepted.get_or_create(&ClassLabel {
                clase: clase.into(),
            });
        }
        for tipo in SWEEPS {
            let _ = commands
                .swept
                .get_or_create(&KindLabel { tipo: tipo.into() });
        }
        commands
    }

    /// A new command of class `clase` ([`CLASSES`]) was stored.
    pub fn accepted(&self, clase: &str) {
        self.accepted
            .get_or_create(&ClassLabel {
                clase: clase.into(),
            })
            .inc();
    }

    /// A report with `status` was recorded.
    pub fn reported(&self, status: &str) {
        self.reports
            .get_or_create(&StateLabel {
                estado: status.into(),
            })
            .inc();
    }

    /// The sweeper ended `expired` commands (`vencido`) and `lease_lost`
    /// leases (`reserva_vencida`).
    pub fn swept(&self, expired: u64, lease_lost: u64) {
        for (tipo, n) in SWEEPS.into_iter().zip([expired, lease_lost]) {
            if n > 0 {
                self.swept
                    .get_or_create(&KindLabel { tipo: tipo.into() })
                    .inc_by(n);
            }
        }
    }

    /// A long-poll begins: counted in `poll_waiters` until the guard drops
    /// (its answer, an error, or the client leaving).
    pub fn waiting(&self) -> Waiting {
        self.poll_waiters.inc();
        Waiting(self.poll_waiters.clone())
    }
}

/// One long-poll in progress ([`Commands::waiting`]).
#[derive(Debug)]
pub struct Waiting(Gauge);

impl Drop for Waiting {
    fn drop(&mut self) {
        self.0.dec();
    }
}
