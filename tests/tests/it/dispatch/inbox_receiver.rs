//! A webhook receiver as a user of Motor builds one, on the
//! `motor-receiver` crate: its axum extractor verifies each request (408 and
//! 401 by itself) and its Postgres inbox, on a database of its own, applies
//! each event once. For the profile tests it can switch the secrets it
//! trusts (a rotation), lose acknowledgements, and run with a wrong clock.

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
use motor_domain::signature::SigningProfile;
use motor_receiver::{
    Envelope, Inbox, Profile, Received, Secret, Verifier, Webhook, WebhookRejection,
};
use sqlx::{Connection, Executor, PgConnection, PgPool};

use crate::{signature_profiles::interop::Shown, util::pg_server};

const INBOX_CLIENT: &str = "crm";

/// One request as the receiver got it.
#[derive(Debug, Clone)]
pub struct Request {
    pub headers: HeaderMap,
    /// The body of a request that verified.
    pub body: Option<Bytes>,
    /// The test's phase when it arrived.
    pub phase: usize,
    pub status: u16,
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

pub struct InboxReceiver {
    base: String,
    app: App,
    pool: PgPool,
}

impl InboxReceiver {
    pub async fn start(profile: SigningProfile, lose_every_third_ack: bool) -> Self {
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
        let addr = crate::util::serve_loopback(router).await;
        Self {
            base: format!("http://{addr}"),
            app,
            pool,
        }
    }

    pub fn url(&self, route: &str) -> String {
        format!("{}{route}", self.base)
    }

    /// From now on the receiver knows these secrets, and only these.
    pub fn trust_only(&self, secrets: &[&Shown]) {
        let secrets = secrets
            .iter()
            .map(|s| Secret::with_key_id(&s.key_id, &s.valor));
        *self.app.verifier.write().unwrap() = Verifier::new(self.app.profile, secrets).unwrap();
    }

    pub fn set_phase(&self, phase: usize) {
        self.app.phase.store(phase, Ordering::SeqCst);
    }

    pub fn set_skew(&self, seconds: i64) {
        *self.app.skew.lock().unwrap() = seconds;
    }

    pub fn requests(&self) -> Vec<Request> {
        self.app.log.lock().unwrap().requests.clone()
    }

    /// (first attempts, acknowledgements lost, applied, duplicates).
    pub fn counts(&self) -> (usize, usize, usize, usize) {
        let log = self.app.log.lock().unwrap();
        (
            log.first_attempts.len(),
            log.acks_lost,
            log.applied,
            log.duplicates,
        )
    }

    /// The event ids in the inbox.
    pub async fn kept_event_ids(&self) -> HashSet<uuid::Uuid> {
        sqlx::query_scalar("SELECT event_id FROM motor_inbox WHERE client = $1")
            .bind(INBOX_CLIENT)
            .fetch_all(&self.pool)
            .await
            .unwrap()
            .into_iter()
            .collect()
    }

    /// (rows, distinct event ids) in the inbox and in the effects table.
    pub async fn kept(&self) -> ((i64, i64), (i64, i64)) {
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
    let server = pg_server();
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
