//! Each signing profile end to end against a running Motor, received the
//! way a user would build a receiver: on the `motor-receiver` crate (its
//! axum extractor and its Postgres inbox, on a database of its own). The
//! receiver verifies every delivery across a secret rotation while Motor
//! retries the acknowledgements it "lost"; a receiver with a wrong clock
//! answers 408 and is retried, never suspended; and real deliveries pass
//! the public verifiers (`firma/interop.rs`).

use std::{
    collections::HashSet,
    sync::{
        atomic::{AtomicUsize, Ordering},
        Arc, Mutex, RwLock,
    },
    time::{Duration, SystemTime},
};

use axum::{
    body::Bytes,
    extract::{FromRef, State},
    http::{HeaderMap, StatusCode as AxumStatus},
    routing::post,
    Router,
};
use motor_domain::{signature::SigningProfile, subscription::SubscriptionId};
use motor_receiver::{
    Envelope, Inbox, Profile, Received, Secret, Verifier, Webhook, WebhookRejection,
};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use sqlx::{Connection, Executor, PgConnection, PgPool};

use super::{delivery_detail, motor, post_many, states, wait_state};
use crate::{
    firma::interop::{assert_accepted, Shown},
    subscriptions::{call, create},
    util::{server_url, Tenant, TestMotor, ADMIN_TOKEN},
};

const INBOX_CLIENT: &str = "crm";

/// One request as the receiver got it.
#[derive(Debug, Clone)]
struct Request {
    headers: HeaderMap,
    /// The body of a request that verified.
    body: Option<Bytes>,
    /// The test's phase when it arrived.
    phase: usize,
    status: u16,
}

#[derive(Debug, Default)]
struct Log {
    requests: Vec<Request>,
    /// Delivery ids whose first attempt verified.
    first_attempts: HashSet<String>,
    /// First attempts answered 500 after the inbox committed them.
    acks_lost: usize,
    applied: usize,
    duplicates: usize,
    not_kept: usize,
}

#[derive(Clone)]
struct App {
    profile: Profile,
    verifier: Arc<RwLock<Verifier>>,
    inbox: Inbox,
    log: Arc<Mutex<Log>>,
    phase: Arc<AtomicUsize>,
    /// Answer 500 to every third first attempt, after the commit.
    lose_every_third_ack: bool,
    /// The `/skewed` route's clock, in seconds from the real one.
    skew: Arc<Mutex<i64>>,
}

/// The extractor reads the secrets the receiver trusts right now.
impl FromRef<App> for Verifier {
    fn from_ref(app: &App) -> Self {
        app.verifier.read().unwrap().clone()
    }
}

/// Applies a verified event once through the inbox (its effect: a row in
/// `effects`, in the inbox's transaction).
async fn keep(app: &App, event: &Envelope, delivery_id: Option<&str>) -> AxumStatus {
    let delivery_id = delivery_id
        .expect("Motor sends X-MW-Delivery-Id with every profile")
        .to_owned();
    let lose_ack = {
        let mut log = app.log.lock().unwrap();
        log.first_attempts.insert(delivery_id)
            && app.lose_every_third_ack
            && log.first_attempts.len().is_multiple_of(3)
    };
    let received = app
        .inbox
        .receive(event, async |tx| {
            sqlx::query("INSERT INTO effects (event_id, seq) VALUES ($1, $2)")
                .bind(event.event_id)
                .bind(event.seq)
                .execute(&mut *tx)
                .await
                .map(drop)
        })
        .await;
    let mut log = app.log.lock().unwrap();
    match &received {
        Received::Applied => log.applied += 1,
        Received::Duplicate => log.duplicates += 1,
        Received::Failed(_) => log.not_kept += 1,
    }
    if lose_ack && matches!(received, Received::Applied) {
        log.acks_lost += 1;
        return AxumStatus::INTERNAL_SERVER_ERROR;
    }
    received.status()
}

fn record(app: &App, headers: HeaderMap, body: Option<Bytes>, status: AxumStatus) -> AxumStatus {
    app.log.lock().unwrap().requests.push(Request {
        headers,
        body,
        phase: app.phase.load(Ordering::SeqCst),
        status: status.as_u16(),
    });
    status
}

/// The receiver as the crate's docs build it: the extractor verifies (408
/// and 401 by itself), the inbox applies once.
async fn hook(
    State(app): State<App>,
    headers: HeaderMap,
    webhook: Result<Webhook, WebhookRejection>,
) -> AxumStatus {
    match webhook {
        Err(rejection) => record(&app, headers, None, rejection.status()),
        Ok(webhook) => {
            let status = keep(&app, &webhook.envelope, webhook.delivery_id()).await;
            record(&app, headers, Some(webhook.body), status)
        }
    }
}

/// The same receiver on a machine whose clock is `skew` seconds off.
async fn skewed(State(app): State<App>, headers: HeaderMap, body: Bytes) -> AxumStatus {
    let skew = *app.skew.lock().unwrap();
    let now = if skew >= 0 {
        SystemTime::now() + Duration::from_secs(skew as u64)
    } else {
        SystemTime::now() - Duration::from_secs(skew.unsigned_abs())
    };
    let verifier = Verifier::from_ref(&app);
    let status = match verifier.verify(&headers, &body, now) {
        Err(e) => e.status(),
        Ok(verified) => match Envelope::from_slice(&body) {
            Ok(event) => keep(&app, &event, verified.delivery_id.as_deref()).await,
            Err(_) => AxumStatus::BAD_REQUEST,
        },
    };
    record(&app, headers, Some(body), status)
}

struct InboxReceiver {
    base: String,
    app: App,
    pool: PgPool,
}

impl InboxReceiver {
    async fn start(profile: SigningProfile, lose_every_third_ack: bool) -> Self {
        let profile = Profile::parse(profile.as_str()).unwrap();
        let pool = receiver_database().await;
        let inbox = Inbox::new(pool.clone(), INBOX_CLIENT);
        inbox.create().await.unwrap();
        sqlx::query("CREATE TABLE effects (event_id uuid NOT NULL, seq bigint NOT NULL)")
            .execute(&pool)
            .await
            .unwrap();
        // Until the test hands it the subscription's secret.
        let placeholder = Shown::stranger("whk_00");
        let app = App {
            profile,
            verifier: Arc::new(RwLock::new(
                Verifier::new(profile, [Secret::new(placeholder.valor)]).unwrap(),
            )),
            inbox,
            log: Arc::default(),
            phase: Arc::default(),
            lose_every_third_ack,
            skew: Arc::default(),
        };
        let router = Router::new()
            .route("/hook", post(hook))
            .route("/skewed", post(skewed))
            .with_state(app.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
        Self {
            base: format!("http://{addr}"),
            app,
            pool,
        }
    }

    fn url(&self, route: &str) -> String {
        format!("{}{route}", self.base)
    }

    /// From now on the receiver knows these secrets, and only these.
    fn trust_only(&self, secrets: &[&Shown]) {
        let secrets = secrets
            .iter()
            .map(|s| Secret::with_key_id(&s.key_id, &s.valor));
        *self.app.verifier.write().unwrap() = Verifier::new(self.app.profile, secrets).unwrap();
    }

    fn set_phase(&self, phase: usize) {
        self.app.phase.store(phase, Ordering::SeqCst);
    }

    fn set_skew(&self, seconds: i64) {
        *self.app.skew.lock().unwrap() = seconds;
    }

    fn requests(&self) -> Vec<Request> {
        self.app.log.lock().unwrap().requests.clone()
    }

    /// (rows, distinct event ids) in the inbox and in the effects table.
    async fn kept(&self) -> ((i64, i64), (i64, i64)) {
        let inbox: (i64, i64) = sqlx::query_as(
            "SELECT count(*), count(DISTINCT event_id) FROM motor_inbox WHERE client = $1",
        )
        .bind(INBOX_CLIENT)
        .fetch_one(&self.pool)
        .await
        .unwrap();
        let effects: (i64, i64) =
            sqlx::query_as("SELECT count(*), count(DISTINCT event_id) FROM effects")
                .fetch_one(&self.pool)
                .await
                .unwrap();
        (inbox, effects)
    }
}

/// A fresh, empty database for the receiver (named like the test
/// databases, so that `scripts/test` clears it with them).
async fn receiver_database() -> PgPool {
    let server = server_url();
    let name = format!(
        "motor_test_receiver_{}",
        &uuid::Uuid::new_v4().simple().to_string()[..12]
    );
    let mut admin = PgConnection::connect(&format!("{server}/postgres"))
        .await
        .unwrap();
    admin
        .execute(format!("CREATE DATABASE {name}").as_str())
        .await
        .unwrap();
    sqlx::postgres::PgPoolOptions::new()
        .max_connections(4)
        .connect(&format!("{server}/{name}"))
        .await
        .unwrap()
}

/// How many signatures (one per live key) a request carries.
fn signatures(profile: SigningProfile, headers: &HeaderMap) -> usize {
    let h = |name: &str| headers[name].to_str().unwrap();
    match profile {
        SigningProfile::MwV1 => h("x-mw-signature").split(',').count(),
        SigningProfile::TV1 => h("x-mw-signature").matches("v1=").count(),
        SigningProfile::StandardWebhooks => h("webhook-signature").split(' ').count(),
    }
}

async fn subscribe(
    m: &TestMotor,
    t: &Tenant,
    url: &str,
    profile: SigningProfile,
) -> (SubscriptionId, Shown) {
    let (status, created) = create(
        m,
        &t.token,
        json!({"nombre": "inbox", "url": url, "firma": profile.as_str()}),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    assert_eq!(created["suscripcion"]["firma"], profile.as_str());
    let id = created["suscripcion"]["id"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    (id, Shown::from_answer(&created["secreto"]))
}

/// `per_instance` events on every instance of the tenant.
async fn post_round(m: &TestMotor, t: &Tenant, per_instance: usize, tag: &str) {
    for instance in &t.instances {
        post_many(m, t, *instance, per_instance, tag).await;
    }
}

/// Waits (up to two minutes) until `n` of the subscription's deliveries
/// are `entregada`.
async fn wait_delivered(m: &TestMotor, sub: SubscriptionId, n: i64) {
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    loop {
        let now = states(m, sub).await;
        if now.get("entregada") == Some(&n) {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "waiting for {n} entregada: {now:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

const INSTANCES: usize = 8;

/// 1,000 deliveries under `profile` across a rotation: 400 before it
/// (the receiver knows the first secret), 320 during it with the receiver
/// still knowing only the old secret (the docs' step 1), 280 after the
/// receiver dropped the old one and knows only the new (step 3). Every
/// third first attempt is acknowledged with a 500 after the inbox
/// committed it, so Motor retries it and the inbox turns the retry away.
async fn a_thousand_deliveries_across_a_rotation(profile: SigningProfile) {
    let m = motor(None).await;
    let t = m.tenant(INSTANCES).await;
    let r = InboxReceiver::start(profile, true).await;
    let (sub, old) = subscribe(&m, &t, &r.url("/hook"), profile).await;
    r.trust_only(&[&old]);

    post_round(&m, &t, 50, "before").await;
    wait_delivered(&m, sub, 400).await;

    let (status, rotated) = call(
        &m,
        Method::POST,
        &format!("/v1/subscriptions/{sub}/rotate"),
        &t.token,
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{rotated}");
    let new = Shown::from_answer(&rotated["secreto"]);
    r.set_phase(1);
    post_round(&m, &t, 40, "rotating, old secret only").await;
    wait_delivered(&m, sub, 720).await;

    r.trust_only(&[&new]);
    r.set_phase(2);
    post_round(&m, &t, 35, "rotating, new secret only").await;
    wait_delivered(&m, sub, 1000).await;

    // Every request verified: nothing refused, nothing suspended.
    let requests = r.requests();
    let refused: Vec<u16> = requests
        .iter()
        .filter(|q| q.body.is_none())
        .map(|q| q.status)
        .collect();
    assert!(refused.is_empty(), "{profile}: refused {refused:?}");
    let (_, s) = call(
        &m,
        Method::GET,
        &format!("/v1/subscriptions/{sub}"),
        &t.token,
        None,
    )
    .await;
    assert_eq!(
        (s["estado"].clone(), s["firma"].clone()),
        (json!("activa"), json!(profile.as_str()))
    );
    // One signature before the rotation, two (new and old) during it.
    for q in &requests {
        let expected = if q.phase == 0 { 1 } else { 2 };
        assert_eq!(
            signatures(profile, &q.headers),
            expected,
            "{profile}, phase {}",
            q.phase
        );
    }

    // The inbox holds each of Motor's events exactly once, and the effect
    // ran once per event, though Motor retried every lost acknowledgement.
    let ((rows, distinct), (effects, distinct_effects)) = r.kept().await;
    assert_eq!((rows, distinct), (1000, 1000), "{profile}: inbox");
    assert_eq!(
        (effects, distinct_effects),
        (1000, 1000),
        "{profile}: effects"
    );
    let motor_events: HashSet<uuid::Uuid> = sqlx::query_scalar("SELECT event_id FROM events")
        .fetch_all(&m.db.pool)
        .await
        .unwrap()
        .into_iter()
        .collect();
    let kept: HashSet<uuid::Uuid> =
        sqlx::query_scalar("SELECT event_id FROM motor_inbox WHERE client = $1")
            .bind(INBOX_CLIENT)
            .fetch_all(&r.pool)
            .await
            .unwrap()
            .into_iter()
            .collect();
    assert_eq!(kept, motor_events, "{profile}");
    let (first, lost, applied, duplicates) = {
        let log = r.app.log.lock().unwrap();
        (
            log.first_attempts.len(),
            log.acks_lost,
            log.applied,
            log.duplicates,
        )
    };
    assert_eq!((first, applied), (1000, 1000), "{profile}");
    assert_eq!(lost, 333, "{profile}: every third first attempt");
    assert!(
        duplicates >= lost,
        "{profile}: each lost ack was retried ({duplicates} < {lost})"
    );
    let retried: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM deliveries WHERE subscription_id = $1 AND intentos > 1",
    )
    .bind(sub.as_uuid())
    .fetch_one(&m.db.pool)
    .await
    .unwrap();
    assert!(
        retried >= lost as i64,
        "{profile}: Motor retried {retried} < {lost}"
    );

    // Real deliveries pass the public verifiers: one from before the
    // rotation (its secret), and the latest of each later phase (either
    // secret alone).
    let verified = |phase: usize| {
        requests
            .iter()
            .rfind(|q| q.phase == phase && q.body.is_some())
            .unwrap()
            .clone()
    };
    for (phase, secrets) in [
        (0, vec![old.clone()]),
        (1, vec![new.clone(), old.clone()]),
        (2, vec![new.clone(), old.clone()]),
    ] {
        let q = verified(phase);
        assert_accepted(profile, &q.headers, q.body.as_ref().unwrap(), &secrets);
    }
    m.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn mw_v1_a_thousand_deliveries_across_a_rotation_each_kept_once() {
    a_thousand_deliveries_across_a_rotation(SigningProfile::MwV1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn t_v1_a_thousand_deliveries_across_a_rotation_each_kept_once() {
    a_thousand_deliveries_across_a_rotation(SigningProfile::TV1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn standard_webhooks_a_thousand_deliveries_across_a_rotation_each_kept_once() {
    a_thousand_deliveries_across_a_rotation(SigningProfile::StandardWebhooks).await;
}

/// A receiver whose clock is 10 minutes off (ahead or behind) answers 408
/// to every profile's signature: Motor retries with fresh signatures and
/// never suspends; once the clock is right, everything is delivered.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_receiver_ten_minutes_off_answers_408_and_motor_retries_without_suspending() {
    let m = motor(None).await;
    let t = m.tenant(1).await;
    let instance = t.instances[0];
    let mut receivers = Vec::new();
    for (profile, skew) in [
        (SigningProfile::MwV1, 600),
        (SigningProfile::TV1, -600),
        (SigningProfile::StandardWebhooks, 600),
    ] {
        let r = InboxReceiver::start(profile, false).await;
        let (sub, secret) = subscribe(&m, &t, &r.url("/skewed"), profile).await;
        r.trust_only(&[&secret]);
        r.set_skew(skew);
        receivers.push((profile, r, sub));
    }
    post_many(&m, &t, instance, 3, "skewed").await;

    // The head of each lane is refused with 408 again and again.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while receivers.iter().any(|(_, r, _)| r.requests().len() < 3) {
        assert!(std::time::Instant::now() < deadline, "no retries");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    for (profile, r, sub) in &receivers {
        let requests = r.requests();
        assert!(
            requests.iter().all(|q| q.status == 408),
            "{profile}: {:?}",
            requests.iter().map(|q| q.status).collect::<Vec<_>>()
        );
        let (_, s) = call(
            &m,
            Method::GET,
            &format!("/v1/subscriptions/{sub}"),
            &t.token,
            None,
        )
        .await;
        assert_eq!(
            (s["estado"].clone(), s["motivo"].clone()),
            (json!("activa"), Value::Null),
            "{profile}: a 408 never suspends"
        );
        let detail = delivery_detail(&m, &t, *sub, instance, 1).await;
        assert_eq!(detail["estado"], "pendiente", "{detail}");
        let attempts = detail["intentos_detalle"].as_array().unwrap();
        assert!(attempts.len() >= 2, "{profile}: retried: {detail}");
        assert!(
            attempts.iter().all(|a| a["error"] == "http_408"),
            "{profile}: {detail}"
        );
    }
    let (_, alerts) = call(
        &m,
        Method::GET,
        "/v1/admin/alerts?estado=abierta",
        ADMIN_TOKEN,
        None,
    )
    .await;
    for (_, _, sub) in &receivers {
        assert!(!alerts.to_string().contains(&sub.to_string()), "{alerts}");
    }

    // The clocks are set right: the retries go through, each event once.
    for (_, r, _) in &receivers {
        r.set_skew(0);
    }
    for (profile, r, sub) in &receivers {
        wait_state(&m, *sub, "entregada", 3).await;
        let ((rows, distinct), _) = r.kept().await;
        assert_eq!((rows, distinct), (3, 3), "{profile}");
    }
    m.stop().await;
}
