//! What `motor replay` and `motor tail` share: they talk to a Motor's
//! public API with an API key, like any other client, so they work
//! against a remote Motor (`--url`, `--token`, or `MOTOR_URL` and
//! `MOTOR_TOKEN`). An error answer is shown as the API wrote it (its
//! `code`, `message` and `campo`).

use std::fmt;

use reqwest::{Response, StatusCode};
use serde_json::Value;

/// Where the API is and the key to call it with.
#[derive(Debug, Clone, clap::Args)]
pub struct RemoteArgs {
    /// Motor's base URL.
    #[arg(long, env = "MOTOR_URL", default_value = "http://127.0.0.1:8080")]
    pub url: String,
    /// An API key (`Authorization: Bearer`).
    #[arg(long, env = "MOTOR_TOKEN", hide_env_values = true)]
    pub token: String,
}

impl RemoteArgs {
    /// The full URL of `path` (which starts with `/`).
    pub fn endpoint(&self, path: &str) -> String {
        format!("{}{path}", self.url.trim_end_matches('/'))
    }
}

/// A refusal from the API, or no answer at all.
#[derive(Debug)]
pub enum RemoteError {
    /// The API answered with an error status.
    Api {
        status: StatusCode,
        code: String,
        message: String,
        field: Option<String>,
    },
    /// No answer: connection refused, cut, a timeout.
    Transport(reqwest::Error),
}

impl RemoteError {
    /// Whether trying again later may work (no answer, or a 5xx or 429).
    pub fn is_passing(&self) -> bool {
        match self {
            Self::Transport(_) => true,
            Self::Api { status, .. } => {
                status.is_server_error() || *status == StatusCode::TOO_MANY_REQUESTS
            }
        }
    }

    /// Reads an error answer.
    pub async fn from_response(response: Response) -> Self {
        let status = response.status();
        let body: Value = response.json().await.unwrap_or(Value::Null);
        let error = &body["error"];
        Self::Api {
            status,
            code: error["code"].as_str().unwrap_or("").to_owned(),
            message: error["message"]
                .as_str()
                .unwrap_or(status.canonical_reason().unwrap_or(""))
                .to_owned(),
            field: error["campo"].as_str().map(str::to_owned),
        }
    }
}

impl fmt::Display for RemoteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Api {
                status,
                code,
                message,
                field,
            } => {
                write!(f, "{} {code}: {message}", status.as_u16())?;
                if let Some(field) = field {
                    write!(f, " (campo {field})")?;
                }
                Ok(())
            }
            Self::Transport(e) => write!(f, "no answer from Motor: {e}"),
        }
    }
}

impl std::error::Error for RemoteError {}

impl From<reqwest::Error> for RemoteError {
    fn from(e: reqwest::Error) -> Self {
        Self::Transport(e)
    }
}

/// The answer when it is a success, else the API's error.
pub async fn success(response: Response) -> Result<Response, RemoteError> {
    if response.status().is_success() {
        Ok(response)
    } else {
        Err(RemoteError::from_response(response).await)
    }
}
