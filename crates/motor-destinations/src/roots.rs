//! Extra certificate authorities webhook requests trust beside the
//! built-in roots (Mozilla's, through `webpki-roots`): an operator's
//! private CA, or a test's. Set by `MOTOR_WEBHOOK_EXTRA_ROOTS` (a PEM
//! file); every webhook client of the process — the sender, the `/test`
//! probe and the API's conformance check — trusts the same set.

use std::fmt;

use rustls::pki_types::{pem::PemObject, CertificateDer};

/// Certificates to trust beside the built-in roots; empty by default.
/// Each is kept in the two forms its clients take: DER for the webhook
/// sender's rustls, and reqwest's for the conformance check's client.
#[derive(Clone, Default)]
pub struct ExtraRoots {
    der: Vec<CertificateDer<'static>>,
    reqwest: Vec<reqwest::Certificate>,
}

/// A PEM bundle that holds no usable certificate.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct BadRoots(String);

impl ExtraRoots {
    /// Every certificate of a PEM bundle (`-----BEGIN CERTIFICATE-----`
    /// blocks); an error when it is unreadable, holds none, or holds one
    /// that is not a usable trust anchor.
    pub fn from_pem(pem: &[u8]) -> Result<Self, BadRoots> {
        let der = CertificateDer::pem_slice_iter(pem)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| BadRoots(format!("not a PEM certificate bundle: {e}")))?;
        if der.is_empty() {
            return Err(BadRoots("no certificate in the PEM bundle".into()));
        }
        let mut anchors = rustls::RootCertStore::empty();
        let mut reqwest = Vec::with_capacity(der.len());
        for (n, cert) in der.iter().enumerate() {
            let unusable = |e: &dyn fmt::Display| {
                BadRoots(format!("certificate {} of the bundle: {e}", n + 1))
            };
            anchors.add(cert.clone()).map_err(|e| unusable(&e))?;
            reqwest.push(reqwest::Certificate::from_der(cert).map_err(|e| unusable(&e))?);
        }
        Ok(Self { der, reqwest })
    }

    pub fn len(&self) -> usize {
        self.der.len()
    }

    pub fn is_empty(&self) -> bool {
        self.der.is_empty()
    }

    /// Mozilla's roots (`webpki-roots`) and these: what the webhook
    /// sender's TLS trusts.
    pub(crate) fn with_built_in(&self) -> rustls::RootCertStore {
        let mut store = rustls::RootCertStore {
            roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
        };
        // Each one was added to a store once already, in `from_pem`.
        let (_, unusable) = store.add_parsable_certificates(self.der.iter().cloned());
        debug_assert_eq!(unusable, 0);
        store
    }

    /// `builder` trusting these certificates too (the conformance check's
    /// reqwest client).
    pub(crate) fn add_to(&self, builder: reqwest::ClientBuilder) -> reqwest::ClientBuilder {
        self.reqwest
            .iter()
            .cloned()
            .fold(builder, |b, c| b.add_root_certificate(c))
    }
}

impl fmt::Debug for ExtraRoots {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ExtraRoots({} certificates)", self.der.len())
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

    #[test]
    fn a_block_that_is_no_certificate_is_refused_at_start() {
        // Base64 of six bytes that are not DER, under a CERTIFICATE label.
        let pem = b"-----BEGIN CERTIFICATE-----\nAAECAwQF\n-----END CERTIFICATE-----\n";
        let err = ExtraRoots::from_pem(pem).unwrap_err();
        assert!(
            err.to_string().starts_with("certificate 1 of the bundle"),
            "{err}"
        );
    }
}
