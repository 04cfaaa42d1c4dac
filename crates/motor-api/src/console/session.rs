//! The console's session and CSRF tokens, stateless: a session cookie is
//! its expiry and a MAC of it under a key derived from `MOTOR_ADMIN_TOKEN`;
//! a form's CSRF token is a MAC of the session cookie. Changing the admin
//! token ends every session. The cookie is HttpOnly and SameSite=Strict,
//! scoped to `/console`.

use axum::http::{header, HeaderMap};
use hmac::{Hmac, Mac};
use motor_domain::apikey::constant_time_eq;
use sha2::{Digest, Sha256};

/// The cookie's name.
pub const COOKIE: &str = "motor_console";
/// How long a login lasts.
pub const LIFETIME_SECS: i64 = 12 * 3600;

/// A valid session: its cookie value and the CSRF token its forms carry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Session {
    pub cookie: String,
    pub csrf: String,
}

fn mac(admin_token: &str, purpose: &str, data: &str) -> String {
    let key = Sha256::digest(format!("motor-console\u{0}{admin_token}").as_bytes());
    let mut mac = Hmac::<Sha256>::new_from_slice(&key).expect("any key length");
    mac.update(purpose.as_bytes());
    mac.update(b"\0");
    mac.update(data.as_bytes());
    hex::encode(mac.finalize().into_bytes())
}

impl Session {
    /// A new session, valid for [`LIFETIME_SECS`] from `now`.
    pub fn issue(admin_token: &str, now: i64) -> Self {
        let expiry = (now + LIFETIME_SECS).to_string();
        let cookie = format!("{expiry}.{}", mac(admin_token, "session", &expiry));
        Self::from_cookie(admin_token, cookie)
    }

    fn from_cookie(admin_token: &str, cookie: String) -> Self {
        let csrf = mac(admin_token, "csrf", &cookie);
        Self { cookie, csrf }
    }

    /// The session a request's cookie carries, if it is valid at `now`.
    pub fn from_headers(admin_token: &str, headers: &HeaderMap, now: i64) -> Option<Self> {
        let value = headers
            .get_all(header::COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(';'))
            .filter_map(|pair| pair.trim().split_once('='))
            .find(|(name, _)| *name == COOKIE)
            .map(|(_, value)| value.to_owned())?;
        let (expiry, tag) = value.split_once('.')?;
        let expected = mac(admin_token, "session", expiry);
        if !constant_time_eq(tag.as_bytes(), expected.as_bytes()) {
            return None;
        }
        (expiry.parse::<i64>().ok()? > now).then(|| Self::from_cookie(admin_token, value))
    }

    /// Whether a form's `csrf` field is this session's token.
    pub fn csrf_matches(&self, presented: Option<&str>) -> bool {
        presented.is_some_and(|p| constant_time_eq(p.as_bytes(), self.csrf.as_bytes()))
    }

    /// The `Set-Cookie` value that stores this session.
    pub fn set_cookie(&self) -> String {
        format!(
            "{COOKIE}={}; Path=/console; HttpOnly; SameSite=Strict; Max-Age={LIFETIME_SECS}",
            self.cookie
        )
    }

    /// The `Set-Cookie` value that ends a session.
    pub fn clear_cookie() -> String {
        format!("{COOKIE}=; Path=/console; HttpOnly; SameSite=Strict; Max-Age=0")
    }
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;

    use super::*;

    fn headers(cookie: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(header::COOKIE, HeaderValue::from_str(cookie).unwrap());
        h
    }

    #[test]
    fn a_session_is_valid_until_it_expires_and_only_under_its_token() {
        let s = Session::issue("tok", 1000);
        let h = headers(&format!("other=1; {COOKIE}={}", s.cookie));
        assert_eq!(Session::from_headers("tok", &h, 1001), Some(s.clone()));
        assert_eq!(Session::from_headers("tok", &h, 1000 + LIFETIME_SECS), None);
        assert_eq!(Session::from_headers("other-token", &h, 1001), None);
        let forged = headers(&format!("{COOKIE}=999999999999.{}", "0".repeat(64)));
        assert_eq!(Session::from_headers("tok", &forged, 1001), None);
        assert_eq!(Session::from_headers("tok", &HeaderMap::new(), 1001), None);
    }

    #[test]
    fn csrf_is_bound_to_the_session() {
        let a = Session::issue("tok", 1000);
        let b = Session::issue("tok", 2000);
        assert!(a.csrf_matches(Some(&a.csrf)));
        assert!(!a.csrf_matches(Some(&b.csrf)));
        assert!(!a.csrf_matches(None));
        assert!(!a.csrf_matches(Some("")));
        assert!(a.set_cookie().contains("HttpOnly; SameSite=Strict"));
    }
}
