//! Parsing, canonical hosts and the allowed-destination rules.

use proptest::prelude::*;

use super::*;

fn url(s: &str) -> Result<WebhookUrl, FieldError> {
    WebhookUrl::parse(s, "body.url")
}

fn allowed(u: &str, list: &[&str]) -> bool {
    let list: Vec<String> = list.iter().map(|s| s.to_string()).collect();
    url(u).unwrap().is_allowed_by(&list)
}

#[test]
fn length_boundaries() {
    assert!(url("http://a").is_ok()); // 8 characters
    assert!(url("http://").is_err()); // 7
    let path = "p".repeat(MAX_URL_CHARS - "https://h.io/".len());
    let max = format!("https://h.io/{path}");
    assert_eq!(max.len(), MAX_URL_CHARS);
    assert!(url(&max).is_ok());
    assert_eq!(url(&format!("{max}p")).unwrap_err().campo, "body.url");
}

#[test]
fn refused_shapes() {
    for bad in [
        "ftp://example.com/x",
        "file:///etc/passwd",
        "mailto:a@example.com",
        "https://user:pw@example.com/",
        "https://user@example.com/",
        "https://@example.com/",
        "https://example.com/#frag",
        "https://example.com/#",
        "https://exa mple.com/",
        " https://example.com/",
        "https://example.com/\n",
        "https:///nohost",
        "https:nohost.io/x",
        "https:/nohost.io/x",
        "https://*.example.com/",
        "https://169.254.169.254/latest",
        "http://[fe80::1]/",
        "http://[::ffff:169.254.169.254]/",
        "http://metadata.google.internal/computeMetadata",
        "http://METADATA.GOOGLE.INTERNAL./",
        "http://0.0.0.0/",
        "http://localhost:8080/",
        "http://api.localhost/",
        "notaurl",
    ] {
        let e = url(bad).expect_err(bad);
        assert_eq!(e.campo, "body.url", "{bad}");
    }
}

#[test]
fn accepted_shapes() {
    for ok in [
        "https://crm.ejemplo.com/webhooks/motor",
        "HTTP://Example.COM:8080/a?b=c",
        "http://127.0.0.1:9000/hook",
        "http://[::1]:9000/hook",
        "https://bücher.example/x",
    ] {
        assert!(url(ok).is_ok(), "{ok}");
    }
}

#[test]
fn host_matches_any_port() {
    assert!(allowed("https://crm.ejemplo.com/x", &["crm.ejemplo.com"]));
    assert!(allowed(
        "http://crm.ejemplo.com:8443/x",
        &["crm.ejemplo.com"]
    ));
    assert!(allowed("https://CRM.Ejemplo.com./x", &["crm.ejemplo.com"]));
    assert!(allowed("https://crm.ejemplo.com/x", &["CRM.EJEMPLO.COM"]));
}

#[test]
fn host_port_matches_that_port_only() {
    assert!(allowed("https://h.io/x", &["h.io:443"]));
    assert!(allowed("http://h.io/x", &["h.io:80"]));
    assert!(!allowed("https://h.io/x", &["h.io:80"]));
    assert!(allowed("http://h.io:8080/x", &["h.io:8080"]));
    assert!(!allowed("http://h.io:8081/x", &["h.io:8080"]));
    assert!(allowed("http://127.0.0.1:9000/", &["127.0.0.1:9000"]));
    assert!(!allowed("http://127.0.0.1:9001/", &["127.0.0.1:9000"]));
    assert!(allowed("http://[::1]:9000/", &["[::1]:9000"]));
    assert!(allowed("http://[::1]:9000/", &["[0:0:0:0:0:0:0:1]"]));
}

#[test]
fn no_wildcard_surprises() {
    assert!(!allowed("https://sub.h.io/", &["h.io"]));
    assert!(!allowed("https://evilh.io/", &["h.io"]));
    assert!(!allowed("https://h.io.evil.com/", &["h.io"]));
    assert!(!allowed("https://h.io/", &["*.h.io"]));
    assert!(!allowed("https://h.io/", &["*"]));
    assert!(!allowed("https://h.io/", &[]));
    // A loopback address only when the list names that literal IP.
    assert!(!allowed("http://127.0.0.2/", &["127.0.0.1"]));
    assert!(!allowed("http://[::1]/", &["127.0.0.1"]));
    // IPv4 written oddly is still that address.
    assert!(allowed("http://127.1/", &["127.0.0.1"]));
    assert!(allowed("http://[::ffff:127.0.0.1]/", &["127.0.0.1"]));
}

#[test]
fn idn_is_normalised() {
    assert!(allowed(
        "https://bücher.example/x",
        &["xn--bcher-kva.example"]
    ));
    assert!(allowed(
        "https://xn--bcher-kva.example/x",
        &["Bücher.example"]
    ));
    assert!(allowed("https://BÜCHER.example/x", &["bücher.example:443"]));
}

#[test]
fn entries() {
    for ok in [
        "h.io",
        "h.io:1",
        "h.io:65535",
        "127.0.0.1",
        "[::1]",
        "[::1]:80",
        "bücher.example",
    ] {
        assert!(AllowedDestination::parse(ok).is_some(), "{ok}");
        assert!(parse_allowed_entry(ok, "e").is_ok(), "{ok}");
    }
    for bad in [
        "",
        "h.io:0",
        "h.io:65536",
        "h.io:x",
        "*.h.io",
        "http://h.io",
        "a/b",
        "u@h",
        "::1",
        "[::1",
        "h io",
    ] {
        assert!(AllowedDestination::parse(bad).is_none(), "{bad}");
        assert_eq!(
            parse_allowed_entry(bad, "body.x[0]").unwrap_err().campo,
            "body.x[0]"
        );
    }
}

#[test]
fn blocked_ips() {
    for ip in [
        "169.254.169.254",
        "169.254.0.1",
        "fe80::1",
        "febf::1",
        "::ffff:169.254.1.1",
        "0.0.0.0",
        "::",
        "100.100.100.200",
        "fd00:ec2::254",
    ] {
        assert!(is_blocked_ip(ip.parse().unwrap()), "{ip}");
    }
    for ip in [
        "127.0.0.1",
        "10.0.0.1",
        "8.8.8.8",
        "::1",
        "fec0::1",
        "2001:db8::1",
    ] {
        assert!(!is_blocked_ip(ip.parse().unwrap()), "{ip}");
    }
}

proptest! {
    #[test]
    fn userinfo_fragments_and_other_schemes_are_always_refused(
        host in "[a-z][a-z0-9]{0,15}\\.(io|com|example)",
        path in "(/[a-zA-Z0-9._~-]{0,12}){0,4}",
        user in "[a-zA-Z0-9]{1,10}",
        frag in "[a-zA-Z0-9]{0,10}",
        scheme in "(ftp|ws|wss|file|gopher|javascript)",
    ) {
        let ok = format!("https://{host}{path}");
        prop_assume!(ok.len() >= MIN_URL_CHARS);
        prop_assert!(url(&ok).is_ok());
        let with_user = format!("https://{user}@{host}{path}");
        let with_password = format!("https://{user}:{user}@{host}{path}");
        let with_fragment = format!("https://{host}{path}#{frag}");
        let other_scheme = format!("{scheme}://{host}{path}");
        for bad in [with_user, with_password, with_fragment, other_scheme] {
            prop_assert_eq!(url(&bad).unwrap_err().campo, "body.url");
        }
    }

    #[test]
    fn a_host_entry_allows_its_own_urls_on_any_port(
        host in "[a-z][a-z0-9-]{0,20}(\\.[a-z][a-z0-9]{0,10}){1,3}",
        port in 1u16..,
    ) {
        let u = format!("http://{host}:{port}/hook");
        prop_assume!(WebhookUrl::parse(&u, "u").is_ok());
        let same_port = format!("{host}:{port}");
        let other = format!("{host}:{}", if port == 1 { 2 } else { port - 1 });
        let longer = format!("x{host}");
        prop_assert!(allowed(&u, &[&host]));
        prop_assert!(allowed(&u, &[&same_port]));
        prop_assert!(!allowed(&u, &[&other]));
        prop_assert!(!allowed(&u, &[&longer]));
    }
}
