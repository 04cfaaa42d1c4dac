//! The axum extractor: verifies the request with the [`Verifier`] in the
//! app state and parses the envelope, or answers by itself — 408 for a
//! stale timestamp, 401 for anything unsigned, 400 for a signed body that
//! is not an envelope (Motor marks that delivery `fallida` at once).

use std::time::SystemTime;

use axum_core::{
    extract::{rejection::BytesRejection, FromRef, FromRequest, Request},
    response::{IntoResponse, Response},
};
use bytes::Bytes;
use http::StatusCode;
use uuid::Uuid;

use crate::{Envelope, Verified, Verifier, VerifyError};

/// A verified Motor webhook: what the signature proved, the parsed
/// envelope and the raw body it came from.
///
/// The handler's state must give a [`Verifier`] (`FromRef`). The body is
/// read with axum's body limit (2 MB unless `DefaultBodyLimit` says
/// otherwise).
#[derive(Debug, Clone)]
pub struct Webhook {
    pub verified: Verified,
    pub envelope: Envelope,
    pub body: Bytes,
}

impl Webhook {
    /// `X-MW-Delivery-Id` / `webhook-id`: the same on every retry of one
    /// delivery, new on a replay.
    pub fn delivery_id(&self) -> Option<&str> {
        self.verified.delivery_id.as_deref()
    }

    /// The key to deduplicate by.
    pub fn event_id(&self) -> Uuid {
        self.envelope.event_id
    }

    pub fn instance_id(&self) -> Uuid {
        self.envelope.instance_id
    }

    pub fn seq(&self) -> i64 {
        self.envelope.seq
    }
}

/// Why [`Webhook`] refused a request; its response carries only a status.
#[derive(Debug, thiserror::Error)]
pub enum WebhookRejection {
    #[error(transparent)]
    Verify(#[from] VerifyError),
    #[error(transparent)]
    Body(#[from] BytesRejection),
    #[error("the signed body is not an envelope: {0}")]
    NotAnEnvelope(serde_json::Error),
}

impl WebhookRejection {
    pub fn status(&self) -> StatusCode {
        match self {
            Self::Verify(e) => e.status(),
            Self::Body(e) => e.status(),
            Self::NotAnEnvelope(_) => StatusCode::BAD_REQUEST,
        }
    }
}

impl IntoResponse for WebhookRejection {
    fn into_response(self) -> Response {
        self.status().into_response()
    }
}

impl<S> FromRequest<S> for Webhook
where
    Verifier: FromRef<S>,
    S: Send + Sync,
{
    type Rejection = WebhookRejection;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let verifier = Verifier::from_ref(state);
        let headers = req.headers().clone();
        let body = Bytes::from_request(req, state).await?;
        let verified = verifier.verify(&headers, &body, SystemTime::now())?;
        let envelope = Envelope::from_slice(&body).map_err(WebhookRejection::NotAnEnvelope)?;
        Ok(Self {
            verified,
            envelope,
            body,
        })
    }
}
