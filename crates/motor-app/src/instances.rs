//! An app's instances, each one ledger with its own gapless `seq`.

use motor_domain::{
    operator::{parse_name, Instance},
    AppId,
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
