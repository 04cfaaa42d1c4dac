//! The console's session and CSRF tokens, stateless. The session is a
//! signed cookie (axum-extra's `SignedCookieJar`: the `cookie` crate's
//! HMAC-SHA256 under a key derived from `MOTOR_ADMIN_TOKEN`) whose value
//! is its expiry and a random nonce; a form's CSRF token is a MAC of that
//! value. Changing the admin token ends every session. The cookie is
//! HttpOnly and SameSite=Strict, scoped to `/console`.

use axum::http::HeaderMap;
use axum_extra::extract::cookie::{Cookie, Key, SameSite, SignedCookieJar};
use hmac::{Hmac, Mac};
use motor_domain::apikey::constant_time_eq;
use sha2::{Digest, Sha256, Sha512};

/// The cookie's name.
pub const COOKIE: &str = "motor_console";
/// How long a login lasts.
pub const LIFETIME_SECS: i64 = 12 * 3600;

/// A valid session: its cookie's (verified) value and the CSRF token its
/// forms carry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Session {
    value: String,
    pub csrf: String,
}

/// The cookie-signing key: 64 bytes, as `Key` wants, derived from the
/// admin token so that only its holder's logins verify.
fn signing_key(admin_token: &str) -> Key {
    Key::from(&Sha512::digest(
        format!("motor-console\u{0}{admin_token}").as_bytes(),
    ))
}

fn csrf_token(admin_token: &str, value: &str) -> String {
    let key = Sha256::digest(format!("motor-console-csrf\u{0}{admin_token}").as_bytes());
    let mut mac = Hmac::<Sha256>::new_from_slice(&key).expect("any key length");
    mac.update(value.as_bytes());
    hex::encode(mac.finalize().into_bytes())
}

impl Session {
    /// A new session, valid for [`LIFETIME_SECS`] from `now`.
    pub fn issue(admin_token: &str, now: i64) -> Self {
        let value = format!("{}.{}", now + LIFETIME_SECS, uuid::Uuid::new_v4().simple());
        Self::from_value(admin_token, value)
    }

    fn from_value(admin_token: &str, value: String) -> Self {
        let csrf = csrf_token(admin_token, &value);
        Self { value, csrf }
    }

    /// The session a request's cookie carries, if its signature verifies
    /// and it is valid at `now`.
    pub fn from_headers(admin_token: &str, headers: &HeaderMap, now: i64) -> Option<Self> {
        let jar = SignedCookieJar::from_headers(headers, signing_key(admin_token));
        let cookie = jar.get(COOKIE)?;
        let (expiry, _nonce) = cookie.value().split_once('.')?;
        (expiry.parse::<i64>().ok()? > now)
            .then(|| Self::from_value(admin_token, cookie.value().to_owned()))
    }

    /// Whether a form's `csrf` field is this session's token.
    pub fn csrf_matches(&self, presented: Option<&str>) -> bool {
        presented.is_some_and(|p| constant_time_eq(p.as_bytes(), self.csrf.as_bytes()))
    }

    /// The response part that stores this session (a signed `Set-Cookie`).
    pub fn store(&self, admin_token: &str) -> SignedCookieJar {
        let cookie = Cookie::build((COOKIE, self.value.clone()))
            .path("/console")
            .http_only(true)
            .same_site(SameSite::Strict)
            .max_age(time::Duration::seconds(LIFETIME_SECS));
        SignedCookieJar::new(signing_key(admin_token)).add(cookie)
    }

    /// The response part that ends the session a request carries (the
    /// jar answers with a removal only for a cookie the request had).
    pub fn clear(admin_token: &str, headers: &HeaderMap) -> SignedCookieJar {
        SignedCookieJar::from_headers(headers, signing_key(admin_token))
            .remove(Cookie::build(COOKIE).path("/console"))
    }
}

#[cfg(test)]
mod tests {
    use axum::{
        http::{header, HeaderValue},
        response::IntoResponse,
    };

    use super::*;

    /// The `Set-Cookie` a jar answers with.
    fn set_cookie(jar: SignedCookieJar) -> String {
        let response = jar.into_response();
        let values: Vec<_> = response
            .headers()
            .get_all(header::SET_COOKIE)
            .iter()
            .collect();
        assert_eq!(values.len(), 1);
        values[0].to_str().unwrap().to_owned()
    }

    /// A request carrying `cookie` (`name=value`) among others.
    fn headers(cookie: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(
            header::COOKIE,
            HeaderValue::from_str(&format!("other=1; {cookie}")).unwrap(),
        );
        h
    }

    fn stored(s: &Session, token: &str) -> HeaderMap {
        let set = set_cookie(s.store(token));
        headers(set.split(';').next().unwrap())
    }

    #[test]
    fn a_session_is_valid_until_it_expires_and_only_under_its_token() {
        let s = Session::issue("tok", 1000);
        let h = stored(&s, "tok");
        assert_eq!(Session::from_headers("tok", &h, 1001), Some(s.clone()));
        assert_eq!(Session::from_headers("tok", &h, 1000 + LIFETIME_SECS), None);
        assert_eq!(Session::from_headers("other-token", &h, 1001), None);
        assert_eq!(Session::from_headers("tok", &HeaderMap::new(), 1001), None);
    }

    #[test]
    fn a_forged_or_altered_cookie_is_refused() {
        let forged = headers(&format!("{COOKIE}=99999999999.{}", "0".repeat(64)));
        assert_eq!(Session::from_headers("tok", &forged, 1001), None);
        // A later expiry under the same signature.
        let s = Session::issue("tok", 1000);
        let set = set_cookie(s.store("tok"));
        let pair = set.split(';').next().unwrap();
        let expiry = (1000 + LIFETIME_SECS).to_string();
        let later = pair.replace(&expiry, "99999999999");
        assert_ne!(later, pair);
        assert_eq!(Session::from_headers("tok", &headers(&later), 1001), None);
    }

    #[test]
    fn the_cookie_is_http_only_strict_and_scoped() {
        let set = set_cookie(Session::issue("tok", 1000).store("tok"));
        for part in [
            "HttpOnly",
            "SameSite=Strict",
            "Path=/console",
            &format!("Max-Age={LIFETIME_SECS}"),
        ] {
            assert!(set.contains(part), "{set}");
        }
        let h = stored(&Session::issue("tok", 1000), "tok");
        let cleared = set_cookie(Session::clear("tok", &h));
        assert!(cleared.starts_with(&format!("{COOKIE}=;")), "{cleared}");
        assert!(cleared.contains("Max-Age=0") && cleared.contains("Path=/console"));
    }

    #[test]
    fn csrf_is_bound_to_the_session() {
        let a = Session::issue("tok", 1000);
        let b = Session::issue("tok", 1000);
        assert!(a.csrf_matches(Some(&a.csrf)));
        assert!(!a.csrf_matches(Some(&b.csrf)));
        assert!(!a.csrf_matches(None));
        assert!(!a.csrf_matches(Some("")));
        assert_eq!(a.csrf.len(), 64);
    }
}
