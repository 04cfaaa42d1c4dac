//! Who may call what. API keys arrive as `Authorization: Bearer <token>`
//! and resolve to a [`Principal`]; operator routes compare the bearer with
//! `MOTOR_ADMIN_TOKEN` in constant time.

use axum::{
    extract::FromRequestParts,
    http::{header::AUTHORIZATION, request::Parts},
};
use std::time::{Duration, Instant};

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
            .authenticate(&state.pool, &apikey::token_hash(token))
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

/// The API keys this process found lately, by token hash, each kept for
/// [`ApiKeys::FRESH`]: a producer's requests cost one lookup a second per
/// key instead of one each (at 3,000 requests a second it was half of all
/// the statements Postgres ran). Only live keys are kept, so a key
/// created a moment ago works at once. A key never changes but to be
/// revoked: a revocation through this process forgets every key here at
/// once; one through another process (or `motor admin`) takes effect
/// here within [`ApiKeys::FRESH`]. Bounded: past [`ApiKeys::CAPACITY`]
/// entries it starts over.
#[derive(Debug, Default)]
pub struct ApiKeys {
    known: std::sync::Mutex<KnownKeys>,
}

#[derive(Debug, Default)]
struct KnownKeys {
    keys: std::collections::HashMap<Vec<u8>, (Principal, Instant)>,
    /// Counts revocations through this process: a lookup that began
    /// before one keeps nothing (it may have read the key still live).
    revocations: u64,
}

impl ApiKeys {
    /// How long a key found stays trusted without asking again.
    pub const FRESH: Duration = Duration::from_secs(1);
    const CAPACITY: usize = 10_000;

    async fn authenticate(
        &self,
        pool: &motor_store::Pool,
        token_hash: &[u8],
    ) -> Result<Option<Principal>, ApiError> {
        let revocations = {
            let known = self.known.lock().expect("not poisoned");
            if let Some((principal, found)) = known.keys.get(token_hash) {
                if found.elapsed() < Self::FRESH {
                    return Ok(Some(principal.clone()));
                }
            }
            known.revocations
        };
        let found = Instant::now();
        let principal = motor_app::keys::authenticate(pool, token_hash).await?;
        let mut known = self.known.lock().expect("not poisoned");
        match &principal {
            Some(principal) if known.revocations == revocations => {
                if known.keys.len() >= Self::CAPACITY {
                    known.keys.clear();
                }
                known
                    .keys
                    .insert(token_hash.to_vec(), (principal.clone(), found));
            }
            _ => {
                known.keys.remove(token_hash);
            }
        }
        Ok(principal)
    }

    /// A key was revoked: no key found before is trusted again without
    /// asking.
    pub fn forget(&self) {
        let mut known = self.known.lock().expect("not poisoned");
        known.keys.clear();
        known.revocations += 1;
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
