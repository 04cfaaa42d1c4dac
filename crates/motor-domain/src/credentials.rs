//! A broker destination's `credenciales`: a user and password (RabbitMQ or
//! NATS) or a token (NATS only). Sealed at rest like signing secrets (bound
//! to the subscription by [`credentials_aad`]), opened only by the delivery
//! engine, never shown: the API answers `"credenciales": true`.

use std::fmt;

use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Serialize};

use crate::{destination::Destination, error::FieldError};

const MAX_USER_CHARS: usize = 255;
const MAX_SECRET_CHARS: usize = 4096;

#[derive(Clone)]
pub enum BrokerCredentials {
    User {
        user: String,
        password: SecretString,
    },
    Token(SecretString),
}

/// The sealed form's plaintext (JSON, stored sealed: the renames keep the
/// spelling of credentials already stored).
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Plain {
    #[serde(rename = "usuario", skip_serializing_if = "Option::is_none", default)]
    user: Option<String>,
    #[serde(rename = "clave", skip_serializing_if = "Option::is_none", default)]
    password: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    token: Option<String>,
}

fn check(value: &str, max: usize, field: &str) -> Result<(), FieldError> {
    let chars = value.chars().count();
    if chars == 0 || chars > max {
        return Err(FieldError::invalid(
            field,
            format!("must be 1 to {max} characters"),
        ));
    }
    if value.chars().any(char::is_control) {
        return Err(FieldError::invalid(
            field,
            "must not contain control characters",
        ));
    }
    Ok(())
}

impl BrokerCredentials {
    /// The request's `credenciales` object: `usuario` and `clave` together,
    /// or `token` alone. Fields are named `credenciales.<field>`.
    pub fn parse(
        user: Option<&str>,
        password: Option<&str>,
        token: Option<&str>,
    ) -> Result<Self, FieldError> {
        const BASE: &str = "credenciales";
        match (user, password, token) {
            (Some(u), Some(c), None) => {
                check(u, MAX_USER_CHARS, &format!("{BASE}.usuario"))?;
                check(c, MAX_SECRET_CHARS, &format!("{BASE}.clave"))?;
                Ok(BrokerCredentials::User {
                    user: u.to_owned(),
                    password: c.to_owned().into(),
                })
            }
            (None, None, Some(t)) => {
                check(t, MAX_SECRET_CHARS, &format!("{BASE}.token"))?;
                Ok(BrokerCredentials::Token(t.to_owned().into()))
            }
            (Some(_), None, None) => Err(FieldError::invalid(
                format!("{BASE}.clave"),
                "required with usuario",
            )),
            (None, Some(_), None) => Err(FieldError::invalid(
                format!("{BASE}.usuario"),
                "required with clave",
            )),
            (_, _, Some(_)) if user.is_some() || password.is_some() => Err(FieldError::invalid(
                format!("{BASE}.token"),
                "either usuario and clave, or token alone",
            )),
            _ => Err(FieldError::invalid(
                BASE,
                "must be {\"usuario\", \"clave\"} or {\"token\"}",
            )),
        }
    }

    /// Whether `destination` can use these credentials: only brokers take
    /// any, and RabbitMQ takes no token.
    pub fn check_fits(&self, destination: &Destination) -> Result<(), FieldError> {
        match (destination, self) {
            (Destination::Webhook(_), _) => Err(FieldError::invalid(
                "credenciales",
                "only broker destinations (amqp, nats) take credentials",
            )),
            (Destination::Amqp(_), BrokerCredentials::Token(_)) => Err(FieldError::invalid(
                "credenciales.token",
                "RabbitMQ takes usuario and clave",
            )),
            _ => Ok(()),
        }
    }

    /// The plaintext to seal.
    pub fn to_plaintext(&self) -> Vec<u8> {
        let plain = match self {
            BrokerCredentials::User { user, password } => Plain {
                user: Some(user.clone()),
                password: Some(password.expose_secret().to_owned()),
                token: None,
            },
            BrokerCredentials::Token(t) => Plain {
                user: None,
                password: None,
                token: Some(t.expose_secret().to_owned()),
            },
        };
        serde_json::to_vec(&plain).expect("strings always serialise")
    }

    /// Reads back what [`to_plaintext`](Self::to_plaintext) wrote.
    pub fn from_plaintext(bytes: &[u8]) -> Option<Self> {
        let plain: Plain = serde_json::from_slice(bytes).ok()?;
        match (plain.user, plain.password, plain.token) {
            (Some(user), Some(password), None) => Some(BrokerCredentials::User {
                user,
                password: password.into(),
            }),
            (None, None, Some(t)) => Some(BrokerCredentials::Token(t.into())),
            _ => None,
        }
    }
}

impl fmt::Debug for BrokerCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BrokerCredentials::User { user, .. } => f
                .debug_struct("User")
                .field("user", user)
                .field("password", &"[REDACTED]")
                .finish(),
            BrokerCredentials::Token(_) => f.write_str("Token([REDACTED])"),
        }
    }
}

impl PartialEq for BrokerCredentials {
    fn eq(&self, other: &Self) -> bool {
        self.to_plaintext() == other.to_plaintext()
    }
}

impl Eq for BrokerCredentials {}

/// Associated data binding sealed credentials to their subscription.
pub fn credentials_aad(subscription: &uuid::Uuid) -> Vec<u8> {
    format!("motor/subscription-credentials/{subscription}").into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_and_fields() {
        assert!(BrokerCredentials::parse(Some("u"), Some("p"), None).is_ok());
        assert!(BrokerCredentials::parse(None, None, Some("t")).is_ok());
        let field = |u, c, t| BrokerCredentials::parse(u, c, t).unwrap_err().field;
        assert_eq!(field(Some(""), Some("p"), None), "credenciales.usuario");
        assert_eq!(field(Some("u"), Some(""), None), "credenciales.clave");
        assert_eq!(field(Some("u"), None, None), "credenciales.clave");
        assert_eq!(field(None, Some("p"), None), "credenciales.usuario");
        assert_eq!(field(Some("u"), None, Some("t")), "credenciales.token");
        assert_eq!(field(None, None, None), "credenciales");
        assert_eq!(field(None, None, Some("")), "credenciales.token");
    }

    #[test]
    fn round_trip_and_never_printed() {
        for c in [
            BrokerCredentials::parse(Some("ana"), Some("s3creto"), None).unwrap(),
            BrokerCredentials::parse(None, None, Some("tok3n")).unwrap(),
        ] {
            assert_eq!(
                BrokerCredentials::from_plaintext(&c.to_plaintext()),
                Some(c.clone())
            );
            let printed = format!("{c:?}");
            assert!(!printed.contains("s3creto") && !printed.contains("tok3n"));
        }
    }

    #[test]
    fn fits_only_brokers() {
        let user = BrokerCredentials::parse(Some("u"), Some("p"), None).unwrap();
        let token = BrokerCredentials::parse(None, None, Some("t")).unwrap();
        let web = Destination::parse("https://h.io/", "url").unwrap();
        let amqp = Destination::parse("amqp://h.io/?exchange=x", "url").unwrap();
        let nats = Destination::parse("nats://h.io/s", "url").unwrap();
        assert_eq!(user.check_fits(&web).unwrap_err().field, "credenciales");
        assert!(user.check_fits(&amqp).is_ok() && user.check_fits(&nats).is_ok());
        assert_eq!(
            token.check_fits(&amqp).unwrap_err().field,
            "credenciales.token"
        );
        assert!(token.check_fits(&nats).is_ok());
    }
}
