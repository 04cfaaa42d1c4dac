//! The console's layout and the small pieces every page uses, as maud
//! templates. A value interpolated into `html!` is escaped by maud, so a
//! name, an event type or a reflected form field can only ever be text;
//! the console wraps nothing in `PreEscaped` but this file's own constants
//! (the style sheet and the two scripts the pages ship), which a test
//! checks. Links are built with
//! `url::form_urlencoded`.

use chrono::{Datelike, Timelike};
use maud::{html, Markup, PreEscaped, DOCTYPE};
use motor_domain::time::{self, Timestamp};
use url::form_urlencoded;

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
.estado-entregada,.estado-activa{color:#17803d}.estado-fallida,.estado-suspendida{color:#b42318}.estado-cancelada{color:#6b7280}
.estado-pendiente,.estado-pausada{color:#a15c07}
.error{background:#fde8e8;border:1px solid #b42318;padding:.6rem;margin-bottom:1rem}
.ok{background:#e7f6ec;border:1px solid #17803d;padding:.6rem;margin-bottom:1rem}
form.inline{display:inline}input,select,button{font:inherit;padding:.2rem .4rem}
fieldset{border:1px solid #e3e6ea;background:#fff;margin-bottom:1rem}
svg{background:#fff;border:1px solid #e3e6ea}code{font-size:.85rem}
time{text-decoration:underline dotted;cursor:help;white-space:nowrap}
";

/// Asks before a form marked `data-confirm` is sent; the question is read
/// from the attribute (as text), never written into the script.
pub const CONFIRM_SCRIPT: &str = "document.querySelectorAll('form[data-confirm]').forEach(f=>f.addEventListener('submit',e=>{if(!confirm(f.dataset.confirm))e.preventDefault()}))";

/// The overview reloads itself.
pub const REFRESH_SCRIPT: &str = "setTimeout(()=>location.reload(),15000)";

const NAV: [(&str, &str); 6] = [
    ("/console", "Resumen"),
    ("/console/subscriptions", "Suscripciones"),
    ("/console/apps", "Apps"),
    ("/console/deliveries", "Entregas"),
    ("/console/dlq", "DLQ"),
    ("/console/alerts", "Alertas"),
];

/// A whole page: `active` is the nav entry to mark, `csrf` the session's
/// token (the nav and the logout form show only with a session).
pub fn page(title: &str, active: &str, csrf: Option<&str>, body: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="es" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width";
                title { (title) " · Motor" }
                style { (PreEscaped(STYLE)) }
            }
            body {
                header {
                    strong { "Motor" }
                    @if let Some(csrf) = csrf {
                        @for (href, label) in NAV {
                            a href=(href) class=[(href == active).then_some("on")] { (label) }
                        }
                        form method="post" action="/console/logout" {
                            (csrf_field(csrf))
                            button { "Salir" }
                        }
                    }
                }
                main {
                    h1 { (title) }
                    (body)
                }
                script { (PreEscaped(CONFIRM_SCRIPT)) }
            }
        }
    }
}

/// The hidden CSRF field every action form carries.
pub fn csrf_field(csrf: &str) -> Markup {
    html! { input type="hidden" name="csrf" value=(csrf); }
}

/// A state word, coloured.
pub fn state_badge(state: &str) -> Markup {
    html! { span class={ "estado-" (state) } { (state) } }
}

/// An optional value, or a dash.
pub fn opt(v: Option<&str>) -> Markup {
    html! {
        @match v {
            Some(v) => (v),
            None => "—",
        }
    }
}

/// An error box.
pub fn error_box(message: &str) -> Markup {
    html! { div class="error" role="alert" { (message) } }
}

/// A success box.
pub fn ok_box(message: &str) -> Markup {
    html! { div class="ok" role="status" { (message) } }
}

/// `path` with `pairs` as its query, each name and value percent-encoded
/// (maud then escapes the `&`s where the link is written).
pub fn link<'a>(path: &str, pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> String {
    let query = form_urlencoded::Serializer::new(String::new())
        .extend_pairs(pairs)
        .finish();
    if query.is_empty() {
        path.to_owned()
    } else {
        format!("{path}?{query}")
    }
}

const MONTHS: [&str; 12] = [
    "ene", "feb", "mar", "abr", "may", "jun", "jul", "ago", "sept", "oct", "nov", "dic",
];

/// A time as people read it, in UTC: `3 dic 2026, 07:57:01 UTC`.
pub fn readable(ts: &Timestamp) -> String {
    format!(
        "{} {} {}, {:02}:{:02}:{:02} UTC",
        ts.day(),
        MONTHS[ts.month0() as usize],
        ts.year(),
        ts.hour(),
        ts.minute(),
        ts.second()
    )
}

/// A time: readable, with the exact RFC 3339 value on hover (`title`) and
/// for machines (`datetime`).
pub fn time_at(ts: &Timestamp) -> Markup {
    let exact = time::format(ts);
    html! { time datetime=(exact) title=(exact) { (readable(ts)) } }
}

/// A time the API wrote as RFC 3339; text that is not one is shown as it
/// is.
pub fn time_text(rfc3339: &str) -> Markup {
    match time::parse(rfc3339) {
        Some(ts) => time_at(&ts),
        None => html! { (rfc3339) },
    }
}

/// An optional time, or a dash.
pub fn opt_time(v: Option<&str>) -> Markup {
    match v {
        Some(v) => time_text(v),
        None => opt(None),
    }
}

/// One choice of a select list: its value and what the operator reads.
pub struct Choice<'a> {
    pub value: &'a str,
    pub label: &'a str,
}

/// A select list of `groups` (a label, or none, and its choices) with
/// `current` selected. An empty first choice means "any"; a `current`
/// value that is not among the choices (a hand-edited link) is kept as an
/// extra one, so the form shows what was searched.
pub fn select(
    name: &str,
    current: Option<&str>,
    groups: &[(Option<&str>, Vec<Choice<'_>>)],
) -> Markup {
    let current = current.unwrap_or_default();
    let known = groups
        .iter()
        .flat_map(|(_, choices)| choices)
        .any(|c| c.value == current);
    html! {
        select name=(name) id={ "f-" (name) } {
            option value="" { "(cualquiera)" }
            @if !known && !current.is_empty() {
                option value=(current) selected { (current) }
            }
            @for (label, choices) in groups {
                @if let Some(label) = label {
                    optgroup label=(label) {
                        @for c in choices { (choice(c, current)) }
                    }
                } @else {
                    @for c in choices { (choice(c, current)) }
                }
            }
        }
    }
}

fn choice(c: &Choice<'_>, current: &str) -> Markup {
    html! { option value=(c.value) selected[c.value == current] { (c.label) } }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// What the tests feed every renderer: markup, an attribute break-out
    /// with an event handler, and entities that must stay literal.
    pub const HOSTILE: [&str; 3] = [
        "<script>alert(1)</script>",
        "\"'><img src=x onerror=alert(1)>",
        "&amp;&lt;",
    ];

    /// All three in one value, as a name would carry them.
    pub fn hostile() -> String {
        HOSTILE.join(" ")
    }

    /// Whether `html` shows `hostile()` only as text: no tag or attribute
    /// came from it, and each piece is there escaped.
    pub fn inert(html: &str) -> bool {
        !html.contains("<script>alert")
            && !html.contains("<img")
            && !html.contains("\"'>")
            && !html.contains(" &amp;&lt;")
            && html.contains("&lt;script&gt;alert(1)&lt;/script&gt;")
            && html.contains("&quot;'&gt;&lt;img src=x onerror=alert(1)&gt;")
            && html.contains("&amp;amp;&amp;lt;")
    }

    #[test]
    fn the_layout_and_pieces_escape_every_value() {
        let h = hostile();
        let page = page(
            &h,
            "/console",
            Some(&h),
            html! { (error_box(&h)) (ok_box(&h)) (opt(Some(&h))) (state_badge(&h)) },
        )
        .into_string();
        assert!(inert(&page), "{page}");
        assert!(!page.contains("class=\"estado-<"));
        // The page's own script is the only one.
        assert_eq!(page.matches("<script>").count(), 1);
    }

    #[test]
    fn links_percent_encode_their_query() {
        let h = hostile();
        let url = link(
            "/console/deliveries",
            [("ultimo_error", h.as_str()), ("a b", "ü&=")],
        );
        assert_eq!(
            url,
            "/console/deliveries?ultimo_error=%3Cscript%3Ealert%281%29%3C%2Fscript%3E+%22%27%3E%3Cimg+src%3Dx+onerror%3Dalert%281%29%3E+%26amp%3B%26lt%3B&a+b=%C3%BC%26%3D"
        );
        assert_eq!(link("/console", []), "/console");
        let a = html! { a href=(link("/x", [("a", "1"), ("b", "2")])) {} }.into_string();
        assert_eq!(a, "<a href=\"/x?a=1&amp;b=2\"></a>");
    }

    #[test]
    fn times_read_easily_and_keep_the_exact_value_on_hover() {
        let t = time_text("2026-12-03T07:05:09.25Z").into_string();
        assert_eq!(
            t,
            "<time datetime=\"2026-12-03T07:05:09.250Z\" title=\"2026-12-03T07:05:09.250Z\">\
             3 dic 2026, 07:05:09 UTC</time>"
        );
        // Another offset is shown in UTC.
        assert!(time_text("2026-01-31T23:30:00-02:00")
            .into_string()
            .contains(">1 feb 2026, 01:30:00 UTC<"));
        let h = hostile();
        assert!(inert(&time_text(&h).into_string()));
        assert_eq!(opt_time(None).into_string(), "—");
    }

    #[test]
    fn a_select_marks_the_current_choice_and_keeps_an_unknown_one() {
        let groups = [(
            None,
            vec![
                Choice {
                    value: "a",
                    label: "A",
                },
                Choice {
                    value: "b",
                    label: "B",
                },
            ],
        )];
        let s = select("estado", Some("b"), &groups).into_string();
        assert_eq!(
            s,
            "<select name=\"estado\" id=\"f-estado\"><option value=\"\">(cualquiera)</option>\
             <option value=\"a\">A</option><option value=\"b\" selected>B</option></select>"
        );
        let h = hostile();
        let s = select("estado", Some(&h), &groups).into_string();
        assert!(inert(&s), "{s}");
        assert!(s.contains("selected>&lt;script&gt;"));
    }
}
