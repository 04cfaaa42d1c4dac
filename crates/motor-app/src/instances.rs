//! An app's instances, each one ledger with its own gapless `seq`.

use motor_domain::{
    operator::{parse_name, Instance},
    AppId, InstanceId,
};
use motor_store::{operator as store, Pool};

use crate::Result;

pub async fn create(pool: &Pool, app: AppId, name: &str) -> Result<Instance> {
    let name = parse_name(name, "nombre")?;
    Ok(store::create_instance(pool, app, &name).await?)
}

/// The app's instances; 404 for an unknown app (not an empty list).
pub async fn list(pool: &Pool, app: AppId) -> Result<Vec<Instance>> {
    store::get_app(pool, app).await?;
    Ok(store::list_instances(pool, app).await?)
}

/// The app an instance belongs to and whether it is the app's system
/// instance (written by Motor only); `None` for an unknown instance.
pub async fn owner(pool: &Pool, instance: InstanceId) -> Result<Option<(AppId, bool)>> {
    Ok(store::instance_owner(pool, instance).await?)
}
