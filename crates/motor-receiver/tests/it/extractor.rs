//! The axum extractor, driven through a real Router: 2xx for a verified
//! envelope, and the extractor's own 408 / 401 / 400 otherwise.

use std::time::{SystemTime, UNIX_EPOCH};

use axum::{
    body::Body,
    http::{Request, StatusCode},
    routing::post,
    Router,
};
use motor_receiver::{Profile, Secret, Verifier, Webhook};
use tower::ServiceExt;

use crate::support::*;

async fn handler(webhook: Webhook) -> String {
    format!(
        "{} {} {} {} {}",
        webhook.delivery_id().unwrap_or("-"),
        webhook.event_id(),
        webhook.instance_id(),
        webhook.seq(),
        webhook.envelope.event_type,
    )
}

fn app() -> Router {
    let verifier = Verifier::new(Profile::MwV1, [Secret::new(SECRET_A)]).unwrap();
    Router::new()
        .route("/webhook", post(handler))
        .with_state(verifier)
}

fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

fn request(ts: i64, secret: &str, body: &[u8], extra: &[(&str, &str)]) -> Request<Body> {
    let ts = ts.to_string();
    let sig = hex::encode(tag(
        secret.as_bytes(),
        &[ts.as_bytes(), b".", DELIVERY.as_bytes(), b".", body],
    ));
    let mut req = Request::post("/webhook")
        .header("content-type", "application/json")
        .header("x-mw-timestamp", &ts)
        .header("x-mw-delivery-id", DELIVERY)
        .header("x-mw-key-id", "whk_0a")
        .header("x-mw-signature", format!("v1={sig}"));
    for (n, v) in extra {
        req = req.header(*n, *v);
    }
    req.body(Body::from(body.to_vec())).unwrap()
}

async fn answer(req: Request<Body>) -> (StatusCode, String) {
    let res = app().oneshot(req).await.unwrap();
    let status = res.status();
    let bytes = axum::body::to_bytes(res.into_body(), 1 << 16)
        .await
        .unwrap();
    (status, String::from_utf8(bytes.to_vec()).unwrap())
}

#[tokio::test]
async fn a_verified_envelope_reaches_the_handler() {
    let (status, text) = answer(request(unix_now(), SECRET_A, BODY, &[])).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        text,
        format!("{DELIVERY} e1f0c2d4-0000-4000-8000-000000001187 8a1d2c3e-0000-4000-8000-0000000000a1 1187 webhook.test")
    );
}

#[tokio::test]
async fn the_extractor_answers_failures_itself() {
    let now = unix_now();
    let cases = [
        ("stale", request(now - 301, SECRET_A, BODY, &[]), 408),
        (
            "from the future",
            request(now + 301, SECRET_A, BODY, &[]),
            408,
        ),
        ("wrong secret", request(now, WRONG, BODY, &[]), 401),
        (
            "repeated signature",
            request(now, SECRET_A, BODY, &[("x-mw-signature", "v1=00")]),
            401,
        ),
        (
            "signed, but not an envelope",
            request(now, SECRET_A, br#"{"hola":1}"#, &[]),
            400,
        ),
        (
            "no signature at all",
            Request::post("/webhook").body(Body::from(BODY)).unwrap(),
            401,
        ),
    ];
    for (name, req, expected) in cases {
        let (status, text) = answer(req).await;
        assert_eq!(status.as_u16(), expected, "{name}");
        assert!(text.is_empty(), "{name}: the answer carries no detail");
    }
}

#[cfg(feature = "sqlx")]
mod with_inbox {
    //! The receiver of the crate docs, end to end: extractor, inbox, effect.

    use axum::extract::{FromRef, State};
    use motor_receiver::Inbox;

    use super::*;
    use crate::inbox::TestDb;

    #[derive(Clone, FromRef)]
    struct App {
        verifier: Verifier,
        inbox: Inbox,
    }

    async fn receive(State(inbox): State<Inbox>, webhook: Webhook) -> StatusCode {
        let event = &webhook.envelope;
        let fail = event.data["fallar"] == true;
        inbox
            .receive(event, async |tx| {
                sqlx::query("INSERT INTO effects (event_id, seq) VALUES ($1, $2)")
                    .bind(event.event_id)
                    .bind(event.seq)
                    .execute(&mut *tx)
                    .await?;
                if fail {
                    return Err(sqlx::Error::Protocol("the effect failed".into()));
                }
                Ok(())
            })
            .await
            .status()
    }

    #[tokio::test]
    async fn deliveries_apply_once_and_failures_keep_nothing() {
        let db = TestDb::new().await;
        let inbox = Inbox::new(db.pool.clone(), "crm");
        inbox.create().await.unwrap();
        let app = Router::new()
            .route("/webhook", post(receive))
            .with_state(App {
                verifier: Verifier::new(Profile::MwV1, [Secret::new(SECRET_A)]).unwrap(),
                inbox,
            });
        let send = |body: Vec<u8>| {
            let app = app.clone();
            async move {
                app.oneshot(request(unix_now(), SECRET_A, &body, &[]))
                    .await
                    .unwrap()
                    .status()
            }
        };
        assert_eq!(send(BODY.to_vec()).await, StatusCode::NO_CONTENT);
        assert_eq!(send(BODY.to_vec()).await, StatusCode::NO_CONTENT);
        assert_eq!(db.count("effects").await, 1);
        let failing = String::from_utf8(BODY.to_vec())
            .unwrap()
            .replace("000000001187", "000000001188")
            .replace(r#"{"prueba":true}"#, r#"{"fallar":true}"#);
        assert_eq!(
            send(failing.into_bytes()).await,
            StatusCode::INTERNAL_SERVER_ERROR
        );
        assert_eq!(db.count("effects").await, 1);
        assert_eq!(db.count("motor_inbox").await, 1);
        db.drop().await;
    }
}
