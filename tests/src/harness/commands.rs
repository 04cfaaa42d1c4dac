//! The producer's side of commands as a client would call it: a send or a
//! remote operation under an `Idempotency-Key`, retried with the same key
//! after a cut or a 5xx until it is answered 202 (which must name the same
//! command), and cancels. Each answer is recorded (`command_accepted`,
//! `command_refused`, `command_cancel`).

use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use serde_json::{json, Value};

use super::{short_id, Run, ADMIN_TOKEN};
use crate::history::{now_us, Record, Recorder};

/// What to ask for.
#[derive(Debug, Clone)]
pub struct Ask {
    pub instance: String,
    /// `tipo`: `mensaje` (a send) or a remote operation's family
    /// (`grupos`, …).
    pub kind: String,
    /// The logical message (`m`), what the fake provider logs.
    pub message: String,
    /// Seconds until `expires_at`, if any.
    pub expires_in: Option<u64>,
    /// The `ambiguo` command a person sends again as this new one.
    pub resend_of: Option<String>,
}

/// Sends commands and records what it was told.
#[derive(Clone)]
pub struct CommandProducer {
    api: String,
    http: reqwest::Client,
    token: String,
    recorder: Recorder,
}

impl CommandProducer {
    /// Asks for `ask` under a new key until answered 202 (for up to
    /// `patience`); the command's id.
    pub async fn ask(&self, ask: &Ask, patience: Duration) -> anyhow::Result<String> {
        let key = short_id();
        let requested_us = now_us();
        let deadline = Instant::now() + patience;
        // The body is made once: a retry must be the same request.
        let mut body = if ask.kind == "mensaje" {
            json!({"chat": format!("5491100{:06}", requested_us % 1_000_000),
                   "contenido": {"m": ask.message, "texto": "hola"}})
        } else {
            json!({"tipo": ask.kind, "parametros": {"m": ask.message, "op": "unirse"}})
        };
        if let Some(secs) = ask.expires_in {
            let at = chrono::Utc::now() + chrono::Duration::seconds(secs as i64);
            body["expires_at"] = json!(at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true));
        }
        if let Some(original) = &ask.resend_of {
            body["correlation_id"] = json!(format!("reenvio:{original}"));
        }
        let path = if ask.kind == "mensaje" {
            "messages"
        } else {
            "commands"
        };
        loop {
            let answer = self
                .http
                .post(format!(
                    "http://{}/v1/instances/{}/{path}",
                    self.api, ask.instance
                ))
                .bearer_auth(&self.token)
                .header("Idempotency-Key", &key)
                .json(&body)
                .send()
                .await;
            let error = match answer {
                Ok(res) if res.status().as_u16() == 202 => {
                    let command: Value = res.json().await.context("a 202's body")?;
                    let id = command["id"]
                        .as_str()
                        .context("the command's id")?
                        .to_owned();
                    self.recorder.record(&Record::CommandAccepted {
                        command_id: id.clone(),
                        instance_id: ask.instance.clone(),
                        key: key.clone(),
                        tipo: ask.kind.clone(),
                        message: ask.message.clone(),
                        resend_of: ask.resend_of.clone(),
                        requested_us,
                        t_us: now_us(),
                    });
                    return Ok(id);
                }
                Ok(res) if res.status().is_server_error() => {
                    format!("{} {}", res.status(), res.text().await.unwrap_or_default())
                }
                Ok(res) => {
                    let status = res.status();
                    let text = res.text().await.unwrap_or_default();
                    bail!("{path} for {}: {status} {text}", ask.instance)
                }
                Err(e) => e.to_string(),
            };
            self.recorder.record(&Record::CommandRefused {
                instance_id: ask.instance.clone(),
                key: key.clone(),
                error: error.clone(),
                t_us: now_us(),
            });
            if Instant::now() > deadline {
                bail!("asking {key} of {}: {error}", ask.instance);
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }

    /// Asks to cancel `id` until Motor answers 200 or 409 (recorded).
    pub async fn cancel(&self, id: &str, patience: Duration) -> anyhow::Result<u16> {
        let deadline = Instant::now() + patience;
        loop {
            let answer = self
                .http
                .post(format!("http://{}/v1/commands/{id}/cancel", self.api))
                .bearer_auth(&self.token)
                .send()
                .await;
            match answer {
                Ok(res) if matches!(res.status().as_u16(), 200 | 409) => {
                    let status = res.status().as_u16();
                    self.recorder.record(&Record::CommandCancel {
                        command_id: id.into(),
                        status,
                        t_us: now_us(),
                    });
                    return Ok(status);
                }
                Ok(res) if !res.status().is_server_error() => {
                    bail!("cancel {id}: {}", res.status())
                }
                _ if Instant::now() > deadline => bail!("cancel {id}: no answer"),
                _ => tokio::time::sleep(Duration::from_millis(250)).await,
            }
        }
    }
}

impl Run {
    /// A key of the run's app with the commands' scopes (`commands:write`,
    /// `commands:read`, `commands:execute`): its token.
    pub async fn command_key(&self) -> anyhow::Result<String> {
        let (status, key) = self
            .call(
                reqwest::Method::POST,
                &format!("/v1/admin/apps/{}/keys", self.tenant().app),
                ADMIN_TOKEN,
                Some(json!({"nombre": "commands", "instancias": [],
                            "scopes": ["commands:write", "commands:read", "commands:execute"]})),
            )
            .await?;
        if !(200..300).contains(&status) {
            bail!("a commands key: {status} {key}");
        }
        Ok(key["token"].as_str().context("key token")?.to_owned())
    }

    /// A producer of commands with `token`.
    pub fn command_producer(&self, token: &str) -> CommandProducer {
        CommandProducer {
            api: self.api.clone(),
            http: self.http.clone(),
            token: token.into(),
            recorder: self.recorder.clone(),
        }
    }

    /// Commands not yet in a terminal status.
    pub async fn open_commands(&self) -> anyhow::Result<i64> {
        Ok(sqlx::query_scalar(
            "SELECT count(*) FROM commands WHERE status IN ('aceptado', 'en_cola', 'ejecutando')",
        )
        .fetch_one(&self.pool)
        .await?)
    }

    /// Waits until every command is terminal, or `within` passed; whether
    /// they all were.
    pub async fn settle_commands(&self, within: Duration) -> bool {
        let deadline = Instant::now() + within;
        loop {
            if self.open_commands().await.is_ok_and(|n| n == 0) {
                return true;
            }
            if Instant::now() > deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }

    /// The `ambiguo` commands so far, oldest first: id, instance, `tipo`
    /// and logical message.
    pub async fn ambiguous_commands(
        &self,
    ) -> anyhow::Result<Vec<(String, String, String, String)>> {
        Ok(sqlx::query_as(
            "SELECT id::text, instance_id::text, tipo, \
                    coalesce(contenido->>'m', parametros->>'m', '') \
             FROM commands WHERE status = 'ambiguo' ORDER BY creado_en, id",
        )
        .fetch_all(&self.pool)
        .await?)
    }
}
