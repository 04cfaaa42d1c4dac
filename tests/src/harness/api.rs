//! Motor's HTTP APIs as a client would call them: the operator API for
//! the tenant and settings, the public API for subscriptions, rotations,
//! replays and events. Producers record what they were told.

use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use reqwest::Method;
use serde_json::{json, Value};

use super::{
    brokers::BrokerReceiver, contracts::Product, short_id, Receiver, Run, Tenant, ADMIN_TOKEN,
};
use crate::history::{now_us, Record, Recorder};

/// Posts events and records what it was told.
#[derive(Clone)]
pub struct Producer {
    api: String,
    http: reqwest::Client,
    token: String,
    recorder: Recorder,
}

impl Producer {
    async fn post(&self, instance: &str, events: &[Value]) -> anyhow::Result<(u16, Value)> {
        let response = self
            .http
            .post(format!(
                "http://{}/v1/instances/{instance}/events",
                self.api
            ))
            .bearer_auth(&self.token)
            .json(&Value::Array(events.to_vec()))
            .send()
            .await?;
        let status = response.status().as_u16();
        let text = response.text().await?;
        Ok((status, serde_json::from_str(&text).unwrap_or(Value::Null)))
    }

    /// Posts `n` events to `instance` in batches of `batch`, each with a
    /// unique `source_id`; a failed batch is retried with the same source
    /// ids (the API dedups them) for up to `patience`.
    pub async fn produce(
        &self,
        instance: &str,
        n: usize,
        batch: usize,
        patience: Duration,
    ) -> anyhow::Result<()> {
        self.produce_paced(instance, n, batch, patience, Duration::ZERO)
            .await
    }

    /// [`Self::produce`] with `pause` between one accepted batch and the
    /// next: production spread over the run, so a fault finds it going.
    pub async fn produce_paced(
        &self,
        instance: &str,
        n: usize,
        batch: usize,
        patience: Duration,
        pause: Duration,
    ) -> anyhow::Result<()> {
        let tag = short_id();
        let mut i = 0;
        while i < n {
            let size = batch.min(n - i);
            let source_ids: Vec<String> = (i..i + size).map(|j| format!("{tag}-{j}")).collect();
            let events: Vec<Value> = source_ids
                .iter()
                .map(|s| json!({"type": "fault.test", "data": {"s": s}, "source_id": s}))
                .collect();
            let deadline = Instant::now() + patience;
            loop {
                let answer = self.post(instance, &events).await;
                match answer {
                    Ok((200 | 201, Value::Array(stored))) => {
                        let t_us = now_us();
                        for (envelope, source_id) in stored.iter().zip(&source_ids) {
                            self.recorder.record(&Record::Produced {
                                event_id: envelope["event_id"].as_str().unwrap_or("").into(),
                                instance_id: instance.into(),
                                seq: envelope["seq"].as_i64().unwrap_or(-1),
                                source_id: source_id.clone(),
                                t_us,
                            });
                        }
                        break;
                    }
                    other => {
                        let error = match other {
                            Ok((status, body)) => format!("{status} {body}"),
                            Err(e) => e.to_string(),
                        };
                        self.recorder.record(&Record::ProduceFailed {
                            instance_id: instance.into(),
                            source_ids: source_ids.clone(),
                            error: error.clone(),
                            t_us: now_us(),
                        });
                        if Instant::now() > deadline {
                            bail!("producing to {instance}: {error}");
                        }
                        tokio::time::sleep(Duration::from_millis(250)).await;
                    }
                }
            }
            i += size;
            if !pause.is_zero() {
                tokio::time::sleep(pause).await;
            }
        }
        Ok(())
    }
}

impl Run {
    /// One HTTP call to Motor's API; the JSON answer (or Null).
    pub async fn call(
        &self,
        method: Method,
        path: &str,
        token: &str,
        body: Option<Value>,
    ) -> anyhow::Result<(u16, Value)> {
        let mut request = self
            .http
            .request(method, format!("http://{}{path}", self.api))
            .bearer_auth(token);
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await?;
        let status = response.status().as_u16();
        let text = response.text().await?;
        Ok((status, serde_json::from_str(&text).unwrap_or(Value::Null)))
    }

    async fn call_ok(
        &self,
        method: Method,
        path: &str,
        token: &str,
        body: Value,
    ) -> anyhow::Result<Value> {
        let (status, answer) = self.call(method, path, token, Some(body)).await?;
        if !(200..300).contains(&status) {
            bail!("{path}: {status} {answer}");
        }
        Ok(answer)
    }

    /// Waits for the API to answer `/healthz`.
    pub async fn wait_api(&self, within: Duration) -> anyhow::Result<()> {
        let deadline = Instant::now() + within;
        loop {
            let ok = self
                .http
                .get(format!("http://{}/healthz", self.api))
                .send()
                .await
                .is_ok_and(|r| r.status().is_success());
            if ok {
                return Ok(());
            }
            if Instant::now() > deadline {
                bail!("the API did not come up on {}", self.api);
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// An app allowed to call loopback, `instances` instances, a key with
    /// every scope, and the attempt timeout of this run.
    pub async fn setup_tenant(&mut self, instances: usize) -> anyhow::Result<()> {
        let app = self
            .call_ok(
                Method::POST,
                "/v1/admin/apps",
                ADMIN_TOKEN,
                json!({"nombre": self.config.scenario, "destinos_permitidos": ["127.0.0.1"]}),
            )
            .await?;
        let app = app["id"].as_str().context("app id")?.to_owned();
        let mut ids = Vec::new();
        for i in 0..instances {
            let instance = self
                .call_ok(
                    Method::POST,
                    &format!("/v1/admin/apps/{app}/instances"),
                    ADMIN_TOKEN,
                    json!({"nombre": format!("instance {i}")}),
                )
                .await?;
            ids.push(instance["id"].as_str().context("instance id")?.to_owned());
        }
        let key = self
            .call_ok(
                Method::POST,
                &format!("/v1/admin/apps/{app}/keys"),
                ADMIN_TOKEN,
                json!({"nombre": "faults", "scopes": ["events:write", "events:read",
                       "subscriptions:manage", "deliveries:replay"], "instancias": []}),
            )
            .await?;
        self.call_ok(
            Method::PATCH,
            "/v1/admin/settings",
            ADMIN_TOKEN,
            json!({"webhooks.timeout_segundos": self.config.timeout_secs}),
        )
        .await?;
        self.tenant = Some(Tenant {
            app,
            instances: ids,
            token: key["token"].as_str().context("key token")?.to_owned(),
        });
        Ok(())
    }

    pub fn tenant(&self) -> &Tenant {
        self.tenant.as_ref().expect("setup_tenant first")
    }

    /// A subscription to `receiver` (which then trusts its secret); its id.
    pub async fn subscribe(
        &self,
        receiver: &Receiver,
        ordenado: bool,
        instancias: &[String],
    ) -> anyhow::Result<String> {
        let (id, key_id, secret) = self
            .subscribe_url(receiver.name(), &receiver.url(), ordenado, instancias)
            .await?;
        receiver.trust(&key_id, &secret);
        Ok(id)
    }

    /// A subscription under `product`'s contract to `receiver`, which is
    /// then written for that product and trusts the secret; its id.
    pub async fn subscribe_contract(
        &self,
        receiver: &Receiver,
        product: Product,
        ordenado: bool,
    ) -> anyhow::Result<String> {
        let created = self
            .call_ok(
                Method::POST,
                "/v1/subscriptions",
                &self.tenant().token,
                json!({"nombre": receiver.name(), "url": receiver.url(),
                       "ordenado": ordenado, "contrato": product.wire()}),
            )
            .await?;
        anyhow::ensure!(
            created["suscripcion"]["contrato"] == product.wire(),
            "the subscription did not take contrato {}: {created}",
            product.wire()
        );
        receiver.written_for(product);
        receiver.trust(
            created["secreto"]["key_id"].as_str().context("key_id")?,
            created["secreto"]["valor"].as_str().context("valor")?,
        );
        Ok(created["suscripcion"]["id"]
            .as_str()
            .context("subscription id")?
            .to_owned())
    }

    /// A manual retry of a `fallida` delivery (`POST
    /// /v1/deliveries/{id}/retry`), recorded as a `retry` action; the new
    /// delivery's id.
    pub async fn retry_delivery(&self, sub: &str, delivery: &str) -> anyhow::Result<String> {
        let response = self
            .http
            .post(format!(
                "http://{}/v1/deliveries/{delivery}/retry",
                self.api
            ))
            .bearer_auth(&self.tenant().token)
            .header("Idempotency-Key", short_id())
            .send()
            .await?;
        let status = response.status().as_u16();
        let body = response.text().await?;
        anyhow::ensure!(status == 202, "retry of {delivery}: {status} {body}");
        self.action("retry", sub, &body);
        let answer: Value = serde_json::from_str(&body)?;
        Ok(answer["delivery_id"]
            .as_str()
            .context("the new delivery's id")?
            .to_owned())
    }

    /// A subscription to a broker receiver (which then trusts its secret).
    pub async fn subscribe_broker(
        &self,
        receiver: &BrokerReceiver,
        ordenado: bool,
    ) -> anyhow::Result<String> {
        let (id, key_id, secret) = self
            .subscribe_url(receiver.name(), receiver.url(), ordenado, &[])
            .await?;
        receiver.trust(&key_id, &secret);
        Ok(id)
    }

    /// Creates a subscription to `url`: its id, key id and secret.
    async fn subscribe_url(
        &self,
        nombre: &str,
        url: &str,
        ordenado: bool,
        instancias: &[String],
    ) -> anyhow::Result<(String, String, String)> {
        let created = self
            .call_ok(
                Method::POST,
                "/v1/subscriptions",
                &self.tenant().token,
                json!({"nombre": nombre, "url": url,
                       "ordenado": ordenado, "instancias": instancias}),
            )
            .await?;
        let text = |v: &Value, what: &'static str| -> anyhow::Result<String> {
            Ok(v.as_str().context(what)?.to_owned())
        };
        Ok((
            text(&created["suscripcion"]["id"], "subscription id")?,
            text(&created["secreto"]["key_id"], "key_id")?,
            text(&created["secreto"]["valor"], "valor")?,
        ))
    }

    /// Rotates a subscription's secret; the receiver trusts the new one
    /// too (the old one signs alongside it during the window).
    pub async fn rotate(&self, receiver: &Receiver, sub: &str) -> anyhow::Result<()> {
        let rotated = self
            .call_ok(
                Method::POST,
                &format!("/v1/subscriptions/{sub}/rotate"),
                &self.tenant().token,
                json!({}),
            )
            .await?;
        receiver.trust(
            rotated["secreto"]["key_id"].as_str().context("key_id")?,
            rotated["secreto"]["valor"].as_str().context("valor")?,
        );
        self.action("rotate", sub, "");
        Ok(())
    }

    /// Sets a subscription's `estado` (`activa` reactivates a suspended one).
    pub async fn set_state(&self, sub: &str, estado: &str) -> anyhow::Result<()> {
        self.call_ok(
            Method::PATCH,
            &format!("/v1/subscriptions/{sub}"),
            &self.tenant().token,
            json!({"estado": estado}),
        )
        .await?;
        self.action(
            if estado == "activa" {
                "reactivate"
            } else {
                estado
            },
            sub,
            "",
        );
        Ok(())
    }

    /// A replay of seqs `from..=to` of `instance` to `sub`. A 5xx is
    /// retried with the same `Idempotency-Key`, as a client would (and
    /// recorded as a `replay_failed` action).
    pub async fn replay(
        &self,
        sub: &str,
        instance: &str,
        from: i64,
        to: i64,
    ) -> anyhow::Result<()> {
        let key = short_id();
        for _ in 0..5 {
            let response = self
                .http
                .post(format!(
                    "http://{}/v1/subscriptions/{sub}/replays",
                    self.api
                ))
                .bearer_auth(&self.tenant().token)
                .header("Idempotency-Key", &key)
                .json(
                    &json!({"instancia_id": instance, "desde_seq": from, "hasta_seq": to,
                              "motivo": "fault matrix"}),
                )
                .send()
                .await?;
            let status = response.status().as_u16();
            let body = response.text().await?;
            match status {
                202 => {
                    self.action("replay", sub, &body);
                    return Ok(());
                }
                500..=599 => {
                    self.action("replay_failed", sub, &format!("{status} {body}"));
                    tokio::time::sleep(Duration::from_millis(500)).await;
                }
                _ => bail!("replay: {status} {body}"),
            }
        }
        bail!("replay: 5 answers 5xx in a row")
    }

    /// A producer for this run's tenant (cloneable, for a task of its own).
    pub fn producer(&self) -> Producer {
        Producer {
            api: self.api.clone(),
            http: self.http.clone(),
            token: self.tenant().token.clone(),
            recorder: self.recorder.clone(),
        }
    }
}
