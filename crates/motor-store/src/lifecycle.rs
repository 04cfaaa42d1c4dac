//! What a subscription's change of state does beyond its row: the one
//! place that reactivation (closing its alerts, releasing its lane heads,
//! forgetting its failure streak) and deletion are carried out. The API's
//! PATCH of `estado`, the operator's pause/reactivate and DELETE all call
//! it, in the transaction that saves the row; the engine's side is
//! [`crate::subscriptions::suspend`].

use motor_domain::subscription::{Subscription, SubscriptionState, SuspensionReason};
use sqlx::PgConnection;

use crate::{alerts, deliveries, health, Result};

/// Applies the consequences of `saved` going `from` → `saved.state`, after
/// the row is saved and in the same transaction:
/// - under a contract that cancels on deactivation (Visito), its
///   `pendiente` deliveries end `cancelada` when it leaves `activa` and
///   when it comes back (what reached it meanwhile is not sent):
///   `Deactivation::on_state_change` says when and why;
/// - out of `suspendida` (or into `eliminada`): its open alerts close;
/// - into `activa` from anything else: the head of every lane gets its job
///   (what accumulated goes out, in lane order; an unordered subscription's
///   oldest 1,000 get theirs and their attempts' chains claim the rest) and
///   failures before the reactivation stop counting towards disabling it
///   again.
pub async fn state_changed(
    conn: &mut PgConnection,
    saved: &Subscription,
    from: SubscriptionState,
    from_reason: Option<SuspensionReason>,
) -> Result<()> {
    let (id, to) = (saved.id, saved.state);
    let deactivation = saved.contract.spec().deactivation;
    let suspension = saved.reason.or(from_reason);
    if let Some(reason) = deactivation.on_state_change(from, to, suspension) {
        // Coming back cancels what reached its live lane meanwhile; a
        // replay asked for while it was paused still goes out.
        let live_only = to == SubscriptionState::Active;
        deliveries::cancel_pending(conn, id, reason, live_only).await?;
    }
    let leaves_suspension = from == SubscriptionState::Suspended && to != from;
    if leaves_suspension || to == SubscriptionState::Deleted {
        alerts::close_for_subscription(conn, id).await?;
    }
    if from != SubscriptionState::Active && to == SubscriptionState::Active {
        deliveries::release_lane_heads(conn, id).await?;
        health::forget(&mut *conn, &[*id.as_uuid()]).await?;
    }
    Ok(())
}
