//! Who may call what. API keys arrive as `Authorization: Bearer <token>`
//! and resolve to a [`Principal`]; operator routes compare the bearer with
//! `MOTOR_ADMIN_TOKEN` in constant time.

use axum::{
    extract::FromRequestParts,
    http::{header::AUTHORIZATION, request::Parts},
};
use std::time::{Duration, Instant};

use motor_store::changes::{self, Heard};

use motor_domain::{apikey, principal::Principal, AppId, InstanceId, Scope};

use crate::{error::ApiError, extract::path_id, AppState};

fn bearer(parts: &Parts) -> Option<&str> {
    let value = parts.headers.get(AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}

/// An authenticated API key.
pub struct Caller(pub Principal);

impl FromRequestParts<AppState> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let token = bearer(parts).ok_or(ApiError::Unauthenticated(
            "missing API key: send Authorization: Bearer <token>",
        ))?;
        state
            .api_keys
            .authenticate(&state.pool, &state.metrics, &apikey::token_hash(token))
            .await?
            .map(Caller)
            .ok_or(ApiError::Unauthenticated("unknown or revoked API key"))
    }
}

impl Caller {
    pub fn require(&self, scope: Scope) -> Result<(), ApiError> {
        if self.0.has(scope) {
            Ok(())
        } else {
            Err(ApiError::Forbidden(format!(
                "this key lacks the scope {scope}"
            )))
        }
    }

    /// Resolves a path instance id the caller may use: a key restricted to
    /// other instances gets 403; an instance outside the key's app, 404.
    pub async fn instance(&self, state: &AppState, raw: &str) -> Result<InstanceId, ApiError> {
        Ok(self.owned_instance(state, raw).await?.0)
    }

    /// [`instance`](Self::instance) for a write: the app's system
    /// instance (where Motor publishes its own events) is Motor's alone,
    /// 403.
    pub async fn writable_instance(
        &self,
        state: &AppState,
        raw: &str,
    ) -> Result<InstanceId, ApiError> {
        match self.owned_instance(state, raw).await? {
            (_, true) => Err(ApiError::Forbidden(
                "the app's system instance is written by Motor only".into(),
            )),
            (instance, false) => Ok(instance),
        }
    }

    async fn owned_instance(
        &self,
        state: &AppState,
        raw: &str,
    ) -> Result<(InstanceId, bool), ApiError> {
        let instance: InstanceId = path_id(raw, "instance")?;
        if !self.0.may_access(instance) {
            return Err(ApiError::Forbidden(
                "this key is restricted to other instances".into(),
            ));
        }
        match state.instance_apps.app_of(&state.pool, instance).await? {
            Some((app, system)) if app == self.0.app_id => Ok((instance, system)),
            _ => Err(ApiError::NotFound("instance")),
        }
    }
}

/// Which app each instance belongs to, remembered: an instance never moves
/// to another app and is never deleted, so a known answer stays true and a
/// producer request costs no query for it. Unknown instances are asked
/// every time (one may be created a moment later). Bounded: past
/// [`InstanceApps::CAPACITY`] entries it starts over.
#[derive(Debug, Default)]
pub struct InstanceApps {
    /// The app, and whether it is the app's system instance.
    known: std::sync::Mutex<std::collections::HashMap<InstanceId, (AppId, bool)>>,
}

impl InstanceApps {
    const CAPACITY: usize = 100_000;

    async fn app_of(
        &self,
        pool: &motor_store::Pool,
        instance: InstanceId,
    ) -> Result<Option<(AppId, bool)>, ApiError> {
        if let Some(app) = self.known.lock().expect("not poisoned").get(&instance) {
            return Ok(Some(*app));
        }
        let app = motor_app::instances::owner(pool, instance).await?;
        if let Some(app) = app {
            let mut known = self.known.lock().expect("not poisoned");
            if known.len() >= Self::CAPACITY {
                known.clear();
            }
            known.insert(instance, app);
        }
        Ok(app)
    }
}

/// The API keys this process found lately, by token hash, each trusted
/// for a while without asking Postgres again: a producer's requests cost
/// a lookup now and then per key instead of one each (at 3,000 requests
/// a second it was half of all the statements Postgres ran).
///
/// How long: [`ApiKeys::LISTENED`] while a connection listens for key
/// changes ([`ApiKeys::heard`]) (migration 0026 announces every
/// statement that updates or deletes keys, `motor admin` included), and
/// [`ApiKeys::FRESH`] otherwise; never past the key's expiry. An
/// announcement forgets every key here, so a revocation anywhere takes
/// effect here at its announcement; without a listener, within
/// [`ApiKeys::FRESH`]. A revocation through this process forgets them
/// at once. Only live keys are kept, so a key created a moment ago works
/// at once. Bounded: past [`ApiKeys::CAPACITY`] entries it starts over.
///
/// Why longer than a second: with many tenants (2,000 apps, a key each,
/// 1,000 requests a second between them) each key came back every two
/// seconds, after its second of trust, and every request was a lookup.
#[derive(Debug, Default)]
pub struct ApiKeys {
    known: std::sync::Mutex<KnownKeys>,
}

#[derive(Debug, Default)]
struct KnownKeys {
    /// Each key found and until when it is trusted.
    keys: std::collections::HashMap<Vec<u8>, (Principal, Instant)>,
    /// Counts what made this forget every key: a lookup that began before
    /// one keeps nothing (it may have read the key still live).
    forgotten: u64,
    /// Whether a connection listens for key changes (since the last
    /// forget): a lookup that began while one did is trusted for
    /// [`ApiKeys::LISTENED`].
    listening: bool,
}

impl KnownKeys {
    fn forget(&mut self) {
        self.keys.clear();
        self.forgotten += 1;
    }
}

impl ApiKeys {
    /// How long a key found stays trusted without a listener.
    pub const FRESH: Duration = Duration::from_secs(1);
    /// How long a key found stays trusted while a connection listens for
    /// key changes (`motor_store::changes::TRUSTED_WHILE_LISTENING`).
    pub const LISTENED: Duration = changes::TRUSTED_WHILE_LISTENING;
    const CAPACITY: usize = 10_000;

    async fn authenticate(
        &self,
        pool: &motor_store::Pool,
        metrics: &motor_metrics::Metrics,
        token_hash: &[u8],
    ) -> Result<Option<Principal>, ApiError> {
        let (forgotten, listening) = {
            let known = self.known.lock().expect("not poisoned");
            if let Some((principal, until)) = known.keys.get(token_hash) {
                if Instant::now() < *until {
                    return Ok(Some(principal.clone()));
                }
            }
            (known.forgotten, known.listening)
        };
        let (found, found_at) = (Instant::now(), chrono::Utc::now());
        metrics.api_key_lookups.inc();
        let key = motor_app::keys::authenticate(pool, token_hash).await?;
        let mut known = self.known.lock().expect("not poisoned");
        let Some(key) = key else {
            known.keys.remove(token_hash);
            return Ok(None);
        };
        if known.forgotten != forgotten {
            return Ok(Some(key.principal));
        }
        let trust = if listening {
            Self::LISTENED
        } else {
            Self::FRESH
        };
        let left = key
            .expires_at
            .map_or(trust, |at| (at - found_at).to_std().unwrap_or_default());
        if known.keys.len() >= Self::CAPACITY {
            known.keys.clear();
        }
        known.keys.insert(
            token_hash.to_vec(),
            (key.principal.clone(), found + trust.min(left)),
        );
        Ok(Some(key.principal))
    }

    /// A key was revoked or changed: no key found before is trusted again
    /// without asking.
    pub fn forget(&self) {
        self.known.lock().expect("not poisoned").forget();
    }

    /// Forgets every key, and from now on trusts what is found for as long
    /// as `listening` allows (in one hold of the lock: no lookup may see
    /// the keys forgotten and the listener still up).
    fn set_listening(&self, listening: bool) {
        let mut known = self.known.lock().expect("not poisoned");
        known.forget();
        known.listening = listening;
    }

    /// What the listener for key changes heard (`motor_store::changes::follow`
    /// on [`changes::API_KEYS`]): every key is forgotten at each; what is
    /// found is trusted for [`ApiKeys::LISTENED`] while a connection
    /// listens, [`ApiKeys::FRESH`] otherwise. Keys found before a listener
    /// is up are forgotten when it is, since what changed before it went
    /// unheard.
    pub fn heard(&self, heard: Heard) {
        match heard {
            Heard::Listening => self.set_listening(true),
            Heard::Changed => self.forget(),
            Heard::Deaf => self.set_listening(false),
        }
    }
}

/// The operator, authenticated by `MOTOR_ADMIN_TOKEN`.
pub struct Operator;

impl FromRequestParts<AppState> for Operator {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let Some(expected) = state.admin_token.as_deref() else {
            return Err(ApiError::Unauthenticated(
                "the operator API is closed: set MOTOR_ADMIN_TOKEN to open it",
            ));
        };
        let token = bearer(parts).ok_or(ApiError::Unauthenticated(
            "missing operator token: send Authorization: Bearer $MOTOR_ADMIN_TOKEN",
        ))?;
        if apikey::constant_time_eq(token.as_bytes(), expected.as_bytes()) {
            Ok(Operator)
        } else {
            Err(ApiError::Unauthenticated("wrong operator token"))
        }
    }
}
