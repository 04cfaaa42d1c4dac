//! Reading header values from whatever the caller's HTTP stack hands over:
//! an [`http::HeaderMap`] (axum, hyper, reqwest) or a list of name/value
//! pairs (tests, other stacks). Names compare case-insensitively.

use http::HeaderMap;

use crate::VerifyError;

/// A source of request headers.
pub trait Headers {
    /// Every value of the header `name` (lower-case), in arrival order.
    fn values(&self, name: &str) -> Vec<&[u8]>;
}

impl Headers for HeaderMap {
    fn values(&self, name: &str) -> Vec<&[u8]> {
        self.get_all(name).iter().map(|v| v.as_bytes()).collect()
    }
}

impl<N: AsRef<str>, V: AsRef<[u8]>> Headers for [(N, V)] {
    fn values(&self, name: &str) -> Vec<&[u8]> {
        self.iter()
            .filter(|(n, _)| n.as_ref().eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_ref())
            .collect()
    }
}

impl<N: AsRef<str>, V: AsRef<[u8]>> Headers for Vec<(N, V)> {
    fn values(&self, name: &str) -> Vec<&[u8]> {
        self.as_slice().values(name)
    }
}

impl<N: AsRef<str>, V: AsRef<[u8]>, const K: usize> Headers for [(N, V); K] {
    fn values(&self, name: &str) -> Vec<&[u8]> {
        self.as_slice().values(name)
    }
}

/// The one value of `name`, trimmed: `None` when absent or empty, an error
/// when it arrived twice or is not text.
pub(crate) fn optional<'h, H: Headers + ?Sized>(
    headers: &'h H,
    name: &'static str,
) -> Result<Option<&'h str>, VerifyError> {
    let values = headers.values(name);
    match values.as_slice() {
        [] => Ok(None),
        [one] => {
            let text = std::str::from_utf8(one)
                .map_err(|_| VerifyError::malformed(name, "not text"))?
                .trim();
            if text.bytes().any(|b| b.is_ascii_control()) {
                return Err(VerifyError::malformed(name, "control characters"));
            }
            Ok((!text.is_empty()).then_some(text))
        }
        _ => Err(VerifyError::RepeatedHeader(name)),
    }
}

/// Like [`optional`], but absent or empty is [`VerifyError::Missing`].
pub(crate) fn required<'h, H: Headers + ?Sized>(
    headers: &'h H,
    name: &'static str,
) -> Result<&'h str, VerifyError> {
    optional(headers, name)?.ok_or(VerifyError::Missing(name))
}
