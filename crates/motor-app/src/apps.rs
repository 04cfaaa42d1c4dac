//! Apps (tenants), created and changed by the operator.

use motor_domain::{
    contract::Contract,
    destination::DestinationPolicy,
    operator::{parse_destinations, parse_name, App},
    AppId,
};
use motor_store::{operator as store, Pool};

use crate::Result;

/// A new app as a caller sends it (raw text, checked here).
#[derive(Debug, Clone, Default)]
pub struct NewApp {
    pub name: String,
    pub allowed_destinations: Vec<String>,
    /// `estandar` (when absent) or `publica_https`.
    pub destination_policy: Option<String>,
    /// `motor` (when absent), `visito`, `asixto` or `standard-webhooks`.
    pub contract: Option<String>,
}

/// A change of an app: what is `None` stays.
#[derive(Debug, Clone, Default)]
pub struct AppChange {
    pub name: Option<String>,
    pub allowed_destinations: Option<Vec<String>>,
    pub destination_policy: Option<String>,
    /// Changes the default of subscriptions created after; existing ones
    /// keep theirs.
    pub contract: Option<String>,
}

fn parse_contract(raw: Option<String>) -> Result<Option<Contract>> {
    Ok(raw
        .map(|c| Contract::parse_field(&c, motor_domain::contract::FIELD))
        .transpose()?)
}

pub async fn create(pool: &Pool, input: NewApp) -> Result<App> {
    let name = parse_name(&input.name, "nombre")?;
    let destinations = parse_destinations(&input.allowed_destinations, "destinos_permitidos")?;
    let policy = input
        .destination_policy
        .map(|p| DestinationPolicy::parse_field(&p, "politica_destinos"))
        .transpose()?
        .unwrap_or_default();
    let contract = parse_contract(input.contract)?.unwrap_or_default();
    Ok(store::create_app(pool, &name, &destinations, policy, contract).await?)
}

pub async fn list(pool: &Pool) -> Result<Vec<App>> {
    Ok(store::list_apps(pool).await?)
}

pub async fn get(pool: &Pool, app: AppId) -> Result<App> {
    Ok(store::get_app(pool, app).await?)
}

pub async fn update(pool: &Pool, app: AppId, input: AppChange) -> Result<App> {
    let name = input.name.map(|n| parse_name(&n, "nombre")).transpose()?;
    let destinations = input
        .allowed_destinations
        .map(|d| parse_destinations(&d, "destinos_permitidos"))
        .transpose()?;
    let policy = input
        .destination_policy
        .map(|p| DestinationPolicy::parse_field(&p, "politica_destinos"))
        .transpose()?;
    let contract = parse_contract(input.contract)?;
    Ok(store::update_app(
        pool,
        app,
        name.as_deref(),
        destinations.as_deref(),
        policy,
        contract,
    )
    .await?)
}
