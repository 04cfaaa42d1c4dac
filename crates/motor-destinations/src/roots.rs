//! Extra certificate authorities webhook requests trust beside the
//! built-in roots (Mozilla's, through `webpki-roots`): an operator's
//! private CA, or a test's. Set by `MOTOR_WEBHOOK_EXTRA_ROOTS` (a PEM
//! file); every webhook client of the process — the sender, the `/test`
//! probe and the API's conformance check — trusts the same set.

use std::fmt;

/// Certificates to trust beside the built-in roots; empty by default.
#[derive(Clone, Default)]
pub struct ExtraRoots(Vec<reqwest::Certificate>);

/// A PEM bundle that holds no usable certificate.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct BadRoots(String);

impl ExtraRoots {
    /// Every certificate of a PEM bundle (`-----BEGIN CERTIFICATE-----`
    /// blocks); an error when it is unreadable or holds none.
    pub fn from_pem(pem: &[u8]) -> Result<Self, BadRoots> {
        let certificates = reqwest::Certificate::from_pem_bundle(pem)
            .map_err(|e| BadRoots(format!("not a PEM certificate bundle: {e}")))?;
        if certificates.is_empty() {
            return Err(BadRoots("no certificate in the PEM bundle".into()));
        }
        Ok(Self(certificates))
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// `builder` trusting these certificates too.
    pub(crate) fn add_to(&self, builder: reqwest::ClientBuilder) -> reqwest::ClientBuilder {
        self.0
            .iter()
            .cloned()
            .fold(builder, |b, c| b.add_root_certificate(c))
    }
}

impl fmt::Debug for ExtraRoots {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ExtraRoots({} certificates)", self.0.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bundle_without_a_certificate_is_refused() {
        assert!(ExtraRoots::from_pem(b"").is_err());
        assert!(ExtraRoots::from_pem(include_bytes!("../testdata/tls/server.key")).is_err());
        let roots = ExtraRoots::from_pem(include_bytes!("../testdata/tls/ca.pem")).unwrap();
        assert_eq!(roots.len(), 1);
    }
}
