//! What a subscription's change of state does beyond its row: the one
//! place that reactivation (closing its alerts, releasing its lane heads,
//! forgetting its failure streak) and deletion are carried out. The API's
//! PATCH of `estado`, the operator's pause/reactivate and DELETE all call
//! it, in the transaction that saves the row; the engine's side is
//! [`crate::subscriptions::suspend`].

use motor_domain::subscription::{SubscriptionId, SubscriptionState};
use sqlx::PgConnection;

use crate::{alerts, deliveries, health, Result};

/// Applies the consequences of `id` going `from` → `to`, after the row is
/// saved and in the same transaction:
/// - out of `suspendida` (or into `eliminada`): its open alerts close;
/// - into `activa` from anything else: the head of every lane gets its job
///   (what accumulated goes out, in lane order; an unordered subscription's
///   oldest 1,000 get theirs and their attempts' chains claim the rest) and
///   failures before the reactivation stop counting towards disabling it
///   again.
pub async fn state_changed(
    conn: &mut PgConnection,
    id: SubscriptionId,
    from: SubscriptionState,
    to: SubscriptionState,
) -> Result<()> {
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
