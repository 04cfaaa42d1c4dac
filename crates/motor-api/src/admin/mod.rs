//! The operator API (`/v1/admin/...`, `MOTOR_ADMIN_TOKEN`): apps, their
//! instances and API keys, the settings, alerts and event catalogue, and the
//! cross-app views of `operator`. Each resource is a folder with its
//! operations (plain functions, so that `motor admin` runs the very same
//! code), its HTTP handlers and its wire types.

pub mod alerts;
pub mod apps;
pub mod event_types;
pub mod instances;
pub mod keys;
pub mod operator;
pub mod settings;

use utoipa_axum::router::OpenApiRouter;

pub use self::{
    apps::{create_app, get_app, list_apps, update_app, AppList, CreateApp, UpdateApp},
    instances::{create_instance, list_instances, CreateInstance, InstanceList},
    keys::{create_key, list_keys, revoke_key, CreateKey, KeyList, MAX_KEY_INSTANCES},
};
use crate::AppState;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .merge(apps::router())
        .merge(instances::router())
        .merge(keys::router())
        .merge(settings::router())
        .merge(alerts::router())
        .merge(event_types::router())
        .merge(operator::router())
}
