//! Cancel on deactivation (a contract whose `Deactivation` is `Cancel`,
//! Visito): a subscription's `pendiente` deliveries end `cancelada` with
//! their reason, in the transaction that deactivated it.

use motor_domain::{delivery::CancelReason, subscription::SubscriptionId};
use sqlx::PgConnection;

use crate::Result;

/// Ends every `pendiente` delivery of `subscription` `cancelada` with
/// `reason` — of every lane (live and replays), or of its live lane only
/// when `live_only` (a reactivation: a replay asked for while it was
/// paused is an explicit request and goes out); how many. A delivery whose attempt
/// is in flight is cancelled too: the request may finish, but its record
/// finds the delivery terminal and writes nothing (`Recorded::Stale`), so
/// nothing follows from it. Their jobs, when read, find nothing to claim.
pub async fn cancel_pending(
    conn: &mut PgConnection,
    subscription: SubscriptionId,
    reason: CancelReason,
    live_only: bool,
) -> Result<u64> {
    let done = sqlx::query!(
        "UPDATE deliveries
         SET estado = 'cancelada', motivo = $2, cancelada_en = now(),
             proximo_intento = NULL, reservado_hasta = NULL, aparcado_en = NULL,
             actualizado_en = now()
         WHERE subscription_id = $1 AND estado = 'pendiente' AND (NOT $3 OR lane = 'live')",
        subscription.as_uuid(),
        reason.as_str(),
        live_only,
    )
    .execute(conn)
    .await?;
    Ok(done.rows_affected())
}
