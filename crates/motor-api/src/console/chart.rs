//! Line charts as inline SVG, drawn on the server from the last hour of
//! samples (`motor_metrics::History`): no JavaScript, no chart library.

use maud::{html, Markup};

/// One series: a label, a colour and its values (one per x).
pub struct Series<'a> {
    pub label: &'a str,
    pub color: &'a str,
    pub values: Vec<f64>,
}

const W: f64 = 640.0;
const H: f64 = 180.0;
const PAD: f64 = 30.0;

/// A chart of `series` over `xs` (unix seconds), titled `title`.
pub fn line_chart(title: &str, xs: &[i64], series: &[Series<'_>]) -> Markup {
    let viewbox = format!("0 0 {W} {H}");
    if xs.len() < 2 {
        return html! {
            svg role="img" aria-label=(title) width=(W) height=(H) viewBox=(viewbox) {
                text x=(PAD) y="14" font-size="12" { (title) }
                text x=(PAD) y=(H / 2.0) font-size="12" fill="#667" {
                    "Sin datos todavía: la primera muestra llega con el muestreador."
                }
            }
        };
    }
    let (x0, x1) = (xs[0] as f64, xs[xs.len() - 1] as f64);
    let max = series
        .iter()
        .flat_map(|s| s.values.iter().copied())
        .fold(0.0_f64, f64::max)
        .max(1.0);
    let sx = |x: i64| PAD + (x as f64 - x0) / (x1 - x0).max(1.0) * (W - 2.0 * PAD);
    let sy = |y: f64| H - PAD - y / max * (H - 2.0 * PAD);
    let points = |s: &Series<'_>| -> String {
        xs.iter()
            .zip(&s.values)
            .map(|(x, y)| format!("{:.1},{:.1}", sx(*x), sy(*y)))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let (bottom, right) = (H - PAD, W - PAD);
    html! {
        svg role="img" aria-label=(title) width=(W) height=(H) viewBox=(viewbox) {
            text x=(PAD) y="14" font-size="12" { (title) }
            line x1=(PAD) y1=(bottom) x2=(right) y2=(bottom) stroke="#ccd" {}
            text x="2" y=(PAD + 4.0) font-size="10" { (format!("{max:.1}")) }
            text x="2" y=(bottom) font-size="10" { "0" }
            @for (i, s) in series.iter().enumerate() {
                polyline fill="none" stroke=(s.color) stroke-width="2" points=(points(s)) {}
                text x=(W - 180.0) y=(14.0 + 12.0 * i as f64) font-size="11" fill=(s.color) { (s.label) }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_one_polyline_per_series() {
        let svg = line_chart(
            "rates",
            &[0, 15, 30],
            &[
                Series {
                    label: "a",
                    color: "#00f",
                    values: vec![0.0, 2.0, 1.0],
                },
                Series {
                    label: "<b>",
                    color: "#f00",
                    values: vec![1.0, 1.0, 1.0],
                },
            ],
        )
        .into_string();
        assert_eq!(svg.matches("<polyline").count(), 2);
        assert!(svg.contains("&lt;b&gt;"));
        assert!(line_chart("x", &[1], &[])
            .into_string()
            .contains("Sin datos"));
    }
}
