//! The operator's reads of one subscription by its id alone, whatever its
//! app (the console's subscription page): the subscription and its
//! numbers. Changes go through the same functions as an app's key, with
//! [`access`] for the subscription's app.

use motor_domain::subscription::{Subscription, SubscriptionId};
use motor_store::{
    operator_view,
    subscription_stats::{self, SubscriptionStats},
    subscriptions as store, Pool,
};

use crate::{Access, AppError, Result};

/// How far back the subscription page's numbers look.
pub const STATS_WINDOW: chrono::Duration = chrono::Duration::hours(24);

/// The whole app of a subscription (404 when there is none).
pub async fn access(pool: &Pool, id: SubscriptionId) -> Result<Access> {
    let app = operator_view::subscription_app(pool, *id.as_uuid())
        .await?
        .ok_or(AppError::NotFound("subscription"))?;
    Ok(Access::whole_app(app))
}

/// A subscription of any app.
pub async fn get(pool: &Pool, id: SubscriptionId) -> Result<Subscription> {
    let access = access(pool, id).await?;
    let mut conn = pool.acquire().await?;
    Ok(store::get(&mut conn, access.app, id).await?)
}

/// The numbers of a subscription's deliveries of the last
/// [`STATS_WINDOW`].
pub async fn stats(pool: &Pool, sub: &Subscription) -> Result<SubscriptionStats> {
    let since = chrono::Utc::now() - STATS_WINDOW;
    Ok(subscription_stats::read(pool, sub.app_id, sub.id, since).await?)
}
