//! The console's HTML: one layout, escaping for every value that comes
//! from data, and small helpers. No template engine: every page is a
//! `String` built with `format!`, and every dynamic value goes through
//! [`esc`].

use std::fmt::Write;

/// Escapes text for HTML element content and attribute values.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Percent-encodes a query value.
pub fn q(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

const STYLE: &str = "
body{font-family:system-ui,sans-serif;margin:0;color:#1d2330;background:#f6f7f9}
header{background:#1d2330;color:#fff;padding:.6rem 1.2rem;display:flex;gap:1.2rem;align-items:center}
header a{color:#cfd8e3;text-decoration:none}header a.on{color:#fff;font-weight:600}
header form{margin-left:auto}main{padding:1.2rem}
table{border-collapse:collapse;width:100%;background:#fff;font-size:.9rem}
th,td{border-bottom:1px solid #e3e6ea;padding:.35rem .5rem;text-align:left;vertical-align:top}
th{background:#eef0f3}.num{text-align:right}
.cards{display:flex;gap:1rem;flex-wrap:wrap;margin-bottom:1rem}
.card{background:#fff;border:1px solid #e3e6ea;padding:.7rem 1rem;min-width:9rem}
.card b{display:block;font-size:1.5rem}
.estado-entregada,.estado-activa{color:#17803d}.estado-fallida,.estado-suspendida{color:#b42318}
.estado-pendiente,.estado-pausada{color:#a15c07}
.error{background:#fde8e8;border:1px solid #b42318;padding:.6rem;margin-bottom:1rem}
.ok{background:#e7f6ec;border:1px solid #17803d;padding:.6rem;margin-bottom:1rem}
form.inline{display:inline}input,select,button{font:inherit;padding:.2rem .4rem}
fieldset{border:1px solid #e3e6ea;background:#fff;margin-bottom:1rem}
svg{background:#fff;border:1px solid #e3e6ea}code{font-size:.85rem}
";

const NAV: [(&str, &str); 5] = [
    ("/console", "Resumen"),
    ("/console/subscriptions", "Suscripciones"),
    ("/console/deliveries", "Entregas"),
    ("/console/dlq", "DLQ"),
    ("/console/alerts", "Alertas"),
];

/// A whole page: `active` is the nav entry to mark, `csrf` the session's
/// token (for the logout form), `body` already-escaped HTML.
pub fn page(title: &str, active: &str, csrf: Option<&str>, body: &str) -> String {
    let mut nav = String::new();
    if let Some(csrf) = csrf {
        for (href, label) in NAV {
            let on = if href == active { " class=\"on\"" } else { "" };
            let _ = write!(nav, "<a href=\"{href}\"{on}>{label}</a>");
        }
        let _ = write!(
            nav,
            "<form method=\"post\" action=\"/console/logout\">{}<button>Salir</button></form>",
            csrf_field(csrf)
        );
    }
    format!(
        "<!doctype html><html lang=\"es\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width\">\
         <title>{} · Motor</title><style>{STYLE}</style></head>\
         <body><header><strong>Motor</strong>{nav}</header><main><h1>{}</h1>{body}</main>\
         <script>document.querySelectorAll('form[data-confirm]').forEach(f=>f.addEventListener('submit',e=>{{if(!confirm(f.dataset.confirm))e.preventDefault()}}))</script>\
         </body></html>",
        esc(title),
        esc(title)
    )
}

/// The hidden CSRF field every action form carries.
pub fn csrf_field(csrf: &str) -> String {
    format!(
        "<input type=\"hidden\" name=\"csrf\" value=\"{}\">",
        esc(csrf)
    )
}

/// A state word, coloured.
pub fn state_badge(e: &str) -> String {
    format!("<span class=\"estado-{0}\">{0}</span>", esc(e))
}

/// An optional value, or a dash.
pub fn opt(v: Option<&str>) -> String {
    v.map_or_else(|| "—".to_owned(), esc)
}

/// An error box (the message is escaped).
pub fn error_box(message: &str) -> String {
    format!("<div class=\"error\" role=\"alert\">{}</div>", esc(message))
}

/// A success box (the message is escaped).
pub fn ok_box(message: &str) -> String {
    format!("<div class=\"ok\" role=\"status\">{}</div>", esc(message))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup_and_quotes() {
        assert_eq!(
            esc("<script>\"x\"&'y'</script>"),
            "&lt;script&gt;&quot;x&quot;&amp;&#39;y&#39;&lt;/script&gt;"
        );
        assert_eq!(q("a b&c=ü"), "a%20b%26c%3D%C3%BC");
    }
}
