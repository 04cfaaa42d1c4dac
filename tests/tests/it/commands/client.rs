//! A producer's HTTP calls against a serving Motor, and what the tests
//! read back from its ledger and tables.

use motor_domain::{AppId, InstanceId};
use reqwest::{header::HeaderMap, Method, StatusCode};
use serde_json::Value;

use crate::util::{key, TestMotor};

/// A serving Motor (API role only), an app with `instances` instances
/// and a key with `commands:write`, `commands:read` and `events:read`.
pub struct Producer {
    pub m: TestMotor,
    pub app: AppId,
    pub instances: Vec<InstanceId>,
    pub token: String,
}

/// An answer: status, JSON body (`null` when empty), headers.
pub struct Answer {
    pub status: StatusCode,
    pub body: Value,
    pub headers: HeaderMap,
}

impl Answer {
    /// The field a 4xx names (`error.campo`).
    pub fn field(&self) -> &str {
        self.body["error"]["campo"].as_str().unwrap_or("")
    }
}

impl Producer {
    pub async fn start(instances: usize) -> Self {
        let m = TestMotor::start(&[motor::serve::Role::Api]).await;
        let t = m.tenant(instances).await;
        let token = key(
            &m.db.pool,
            t.app,
            &["commands:write", "commands:read", "events:read"],
            &[],
        )
        .await;
        Self {
            m,
            app: t.app,
            instances: t.instances,
            token,
        }
    }

    pub fn instance(&self) -> InstanceId {
        self.instances[0]
    }

    /// A call with `token`, an optional `Idempotency-Key` and JSON body.
    pub async fn call_as(
        &self,
        token: &str,
        method: Method,
        path: &str,
        idempotency_key: Option<&str>,
        body: Option<&Value>,
    ) -> Answer {
        let mut req = self
            .m
            .http
            .request(method, self.m.url(path))
            .bearer_auth(token);
        if let Some(k) = idempotency_key {
            req = req.header("Idempotency-Key", k);
        }
        if let Some(body) = body {
            req = req.json(body);
        }
        let res = req.send().await.unwrap();
        let status = res.status();
        let headers = res.headers().clone();
        let text = res.text().await.unwrap();
        let body = if text.is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text).unwrap_or_else(|_| panic!("not JSON: {text}"))
        };
        Answer {
            status,
            body,
            headers,
        }
    }

    pub async fn call(
        &self,
        method: Method,
        path: &str,
        idempotency_key: Option<&str>,
        body: Option<&Value>,
    ) -> Answer {
        self.call_as(&self.token, method, path, idempotency_key, body)
            .await
    }

    /// `POST /v1/instances/{instance}/messages`.
    pub async fn send(&self, instance: InstanceId, key: Option<&str>, body: &Value) -> Answer {
        let path = format!("/v1/instances/{instance}/messages");
        self.call(Method::POST, &path, key, Some(body)).await
    }

    /// `POST /v1/instances/{instance}/commands`.
    pub async fn submit(&self, instance: InstanceId, key: Option<&str>, body: &Value) -> Answer {
        let path = format!("/v1/instances/{instance}/commands");
        self.call(Method::POST, &path, key, Some(body)).await
    }

    pub async fn get(&self, id: &str) -> Answer {
        self.call(Method::GET, &format!("/v1/commands/{id}"), None, None)
            .await
    }

    pub async fn cancel(&self, id: &str) -> Answer {
        let path = format!("/v1/commands/{id}/cancel");
        self.call(Method::POST, &path, None, None).await
    }

    /// Every event of `instance`'s ledger, read through the API.
    pub async fn ledger(&self, instance: InstanceId) -> Vec<Value> {
        let path = format!("/v1/instances/{instance}/events?limit=500");
        let answer = self.call(Method::GET, &path, None, None).await;
        assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
        answer.body["events"].as_array().unwrap().clone()
    }

    /// The types of the ledger's events that cite `command_id`.
    pub async fn events_of(&self, instance: InstanceId, command_id: &str) -> Vec<String> {
        self.ledger(instance)
            .await
            .iter()
            .filter(|e| e["command_id"] == command_id)
            .map(|e| e["type"].as_str().unwrap().to_owned())
            .collect()
    }

    /// How many commands the app has in the table.
    pub async fn stored(&self) -> i64 {
        sqlx::query_scalar("SELECT count(*) FROM commands WHERE app_id = $1")
            .bind(uuid::Uuid::from(self.app))
            .fetch_one(&self.m.db.pool)
            .await
            .unwrap()
    }
}
