//! Parsing, canonical hosts and the allowed-destination rules.

use proptest::prelude::*;

use super::*;

fn url(s: &str) -> Result<WebhookUrl, FieldError> {
    WebhookUrl::parse(s, "url")
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
    assert_eq!(url(&format!("{max}p")).unwrap_err().field, "url");
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
        assert_eq!(e.field, "url", "{bad}");
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
        assert_eq!(parse_allowed_entry(bad, "x[0]").unwrap_err().field, "x[0]");
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
            prop_assert_eq!(url(&bad).unwrap_err().field, "url");
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

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

#[test]
fn ipv6_spellings_of_blocked_ipv4_are_blocked() {
    for blocked in [
        // 169.254.169.254 through NAT64 (well-known and local-use), 6to4,
        // Teredo (server and obfuscated client), compatible and mapped.
        "64:ff9b::a9fe:a9fe",
        "64:ff9b::169.254.169.254",
        "64:ff9b:1:a9fe:a9:fe00::",
        "64:ff9b:1::a9fe:a9fe",
        "2002:a9fe:a9fe::1",
        "2001:0:a9fe:a9fe::1",
        "2001:0:4136:e378:8000:63bf:5601:5601",
        "::169.254.169.254",
        "::ffff:169.254.169.254",
        "64:ff9b::0.0.0.0",
        "2002:0:1::",
        "64:ff9b::6464:64c8",
    ] {
        assert!(is_blocked_ip(ip(blocked)), "{blocked}");
    }
    for fine in [
        "64:ff9b::808:808",
        "2002:808:808::1",
        "2001:0:808:808::f7f7:f7f7",
        "2001:db8::1",
        "::1",
        "2606:4700::1111",
        "8.8.8.8",
    ] {
        assert!(!is_blocked_ip(ip(fine)), "{fine}");
    }
    // Teredo's client address is the last 32 bits inverted: 86.1.1.1 ^ !0.
    assert!(embedded_ipv4(ip("2001:0:4136:e378:8000:63bf:a9fe:fefe"))
        .contains(&Ipv4Addr::new(86, 1, 1, 1)));
}

#[test]
fn loopback_through_a_translator_is_loopback() {
    for lo in [
        "127.0.0.1",
        "::1",
        "::ffff:127.0.0.1",
        "64:ff9b::7f00:1",
        "2002:7f00:1::",
        "::127.0.0.2",
    ] {
        assert!(is_loopback_ip(ip(lo)), "{lo}");
    }
    assert!(!is_loopback_ip(ip("64:ff9b::808:808")));
    assert!(!is_loopback_ip(ip("::")));
}

#[test]
fn blocked_ipv6_spellings_are_refused_in_urls() {
    for bad in [
        "http://[64:ff9b::a9fe:a9fe]/",
        "http://[2002:a9fe:a9fe::]/",
        "http://[2001:0:a9fe:a9fe::]/",
        "http://[::a9fe:a9fe]/",
    ] {
        assert_eq!(url(bad).expect_err(bad).field, "url", "{bad}");
    }
}

#[test]
fn public_ipv4_only() {
    for public in [
        "8.8.8.8",
        "1.1.1.1",
        "::ffff:8.8.8.8",
        "100.128.0.1",
        "172.32.0.1",
    ] {
        assert!(is_public_ipv4(ip(public)), "{public}");
    }
    for not in [
        "10.0.0.1",
        "172.16.0.1",
        "192.168.1.1",
        "127.0.0.1",
        "169.254.1.1",
        "100.64.0.1",
        "0.1.2.3",
        "192.0.2.1",
        "198.51.100.7",
        "203.0.113.9",
        "198.18.0.1",
        "224.0.0.1",
        "240.0.0.1",
        "255.255.255.255",
        "192.0.0.8",
        "2606:4700::1111",
        "64:ff9b::808:808",
        "::1",
    ] {
        assert!(!is_public_ipv4(ip(not)), "{not}");
    }
}

#[test]
fn publica_https_admits_https_443_to_a_name_or_public_ipv4() {
    let policy = DestinationPolicy::PublicHttps;
    let dest = |s: &str| Destination::parse(s, "url").unwrap();
    for ok in [
        "https://hooks.acme.com/motor",
        "https://hooks.acme.com:443/motor",
        "https://8.8.8.8/x",
    ] {
        assert!(policy.check(&dest(ok), "url").is_ok(), "{ok}");
    }
    for bad in [
        "http://hooks.acme.com/motor",
        "https://hooks.acme.com:8443/motor",
        "https://10.0.0.1/x",
        "https://127.0.0.1/x",
        "https://[2606:4700::1111]/x",
        "amqp://rabbit.acme.com/?exchange=x",
        "nats://nats.acme.com/s",
    ] {
        assert_eq!(
            policy.check(&dest(bad), "url").unwrap_err().field,
            "url",
            "{bad}"
        );
        assert!(DestinationPolicy::Standard.check(&dest(bad), "u").is_ok());
    }
    assert_eq!(DestinationPolicy::parse("publica_https"), Some(policy));
    assert_eq!(
        DestinationPolicy::parse("estandar"),
        Some(DestinationPolicy::Standard)
    );
    assert_eq!(DestinationPolicy::parse("abierta"), None);
    assert!(policy_admits(DestinationPolicy::Standard, ip("10.0.0.1")));
    assert!(!policy_admits(policy, ip("10.0.0.1")));
    assert!(policy_admits(policy, ip("8.8.8.8")));
}

#[test]
fn entries_that_can_never_match_are_refused() {
    for bad in ["*.acme.com", "fe80::1", "2001:db8::1", "::1"] {
        assert!(parse_allowed_entry(bad, "e").is_err(), "{bad}");
        assert!(
            crate::operator::parse_destination(bad, "destinos_permitidos[0]").is_err(),
            "{bad}"
        );
    }
}
