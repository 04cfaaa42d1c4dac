//! Apps, instances, keys and subscriptions through Motor's API, many at
//! once (the tenants phase makes thousands): the operator API for apps,
//! instances and keys, the app's key for subscriptions.

use std::sync::Arc;

use futures::{stream, StreamExt, TryStreamExt};
use serde_json::json;
use uuid::Uuid;

use crate::{open::Target, server::Motor};

/// Requests the setup keeps in flight.
const CONCURRENCY: usize = 16;

/// An app allowing 127.0.0.1, its key, and its instances.
pub struct App {
    pub token: Arc<str>,
    pub instances: Vec<Uuid>,
}

impl App {
    /// Each instance with the app's key, for the open loop.
    pub fn targets(&self) -> impl Iterator<Item = Target> + '_ {
        self.instances.iter().map(|&instance| Target {
            instance,
            token: self.token.clone(),
        })
    }
}

/// An app named `name` with `instances` instances and a key that writes
/// events and manages subscriptions.
pub async fn app(motor: &Motor, name: &str, instances: usize) -> App {
    let admin = motor.admin_token.as_str();
    let created = motor
        .post(
            "/v1/admin/apps",
            admin,
            json!({"nombre": name, "destinos_permitidos": ["127.0.0.1"]}),
        )
        .await;
    let id = created["id"].as_str().unwrap().to_owned();
    let key = motor
        .post(
            &format!("/v1/admin/apps/{id}/keys"),
            admin,
            json!({"nombre": name, "scopes": ["events:write", "subscriptions:manage"]}),
        )
        .await;
    let path = format!("/v1/admin/apps/{id}/instances");
    let instances: Vec<Uuid> = stream::iter(0..instances)
        .map(|i| {
            let path = path.clone();
            async move {
                let created = motor
                    .post(&path, admin, json!({"nombre": format!("{name}-{i}")}))
                    .await;
                Ok::<Uuid, ()>(created["id"].as_str().unwrap().parse().unwrap())
            }
        })
        .buffered(CONCURRENCY)
        .try_collect()
        .await
        .unwrap();
    App {
        token: key["token"].as_str().unwrap().into(),
        instances,
    }
}

/// An ordered (`orden: instancia`) subscription of the app to `url`
/// covering `instances` (none: all of the app's).
pub async fn subscribe(motor: &Motor, app: &App, name: &str, url: &str, instances: &[Uuid]) {
    let body = json!({
        "nombre": name,
        "url": url,
        "instancias": instances,
        "orden": "instancia",
    });
    motor.post("/v1/subscriptions", &app.token, body).await;
}

/// `apps` apps of `instances` instances each, every instance covered by a
/// subscription of its own to `url`; made [`CONCURRENCY`] apps at a time.
pub async fn tenants(motor: &Motor, apps: usize, instances: usize, url: &str) -> Vec<App> {
    stream::iter(0..apps)
        .map(|a| async move {
            let app = app(motor, &format!("tenant-{a}"), instances).await;
            for (i, instance) in app.instances.iter().enumerate() {
                subscribe(motor, &app, &format!("hook-{i}"), url, &[*instance]).await;
            }
            app
        })
        .buffer_unordered(CONCURRENCY)
        .collect()
        .await
}
