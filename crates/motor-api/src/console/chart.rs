//! Line charts as inline SVG, drawn on the server from the last hour of
//! samples (`motor_metrics::History`): no JavaScript, no chart library.

use std::fmt::Write;

use super::html::esc;

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
pub fn line_chart(title: &str, xs: &[i64], series: &[Series<'_>]) -> String {
    let mut svg = format!(
        "<svg role=\"img\" aria-label=\"{t}\" width=\"{W}\" height=\"{H}\" viewBox=\"0 0 {W} {H}\">\
         <text x=\"{PAD}\" y=\"14\" font-size=\"12\">{t}</text>",
        t = esc(title)
    );
    if xs.len() < 2 {
        let _ = write!(
            svg,
            "<text x=\"{PAD}\" y=\"{}\" font-size=\"12\" fill=\"#667\">Sin datos todavía: \
             la primera muestra llega con el muestreador.</text></svg>",
            H / 2.0
        );
        return svg;
    }
    let (x0, x1) = (xs[0] as f64, xs[xs.len() - 1] as f64);
    let max = series
        .iter()
        .flat_map(|s| s.values.iter().copied())
        .fold(0.0_f64, f64::max)
        .max(1.0);
    let sx = |x: i64| PAD + (x as f64 - x0) / (x1 - x0).max(1.0) * (W - 2.0 * PAD);
    let sy = |y: f64| H - PAD - y / max * (H - 2.0 * PAD);
    let _ = write!(
        svg,
        "<line x1=\"{PAD}\" y1=\"{b}\" x2=\"{r}\" y2=\"{b}\" stroke=\"#ccd\"/>\
         <text x=\"2\" y=\"{top}\" font-size=\"10\">{max:.1}</text>\
         <text x=\"2\" y=\"{b}\" font-size=\"10\">0</text>",
        b = H - PAD,
        r = W - PAD,
        top = PAD + 4.0,
    );
    for (i, s) in series.iter().enumerate() {
        let points: Vec<String> = xs
            .iter()
            .zip(&s.values)
            .map(|(x, y)| format!("{:.1},{:.1}", sx(*x), sy(*y)))
            .collect();
        let _ = write!(
            svg,
            "<polyline fill=\"none\" stroke=\"{c}\" stroke-width=\"2\" points=\"{p}\"/>\
             <text x=\"{lx}\" y=\"{ly}\" font-size=\"11\" fill=\"{c}\">{l}</text>",
            c = esc(s.color),
            p = points.join(" "),
            lx = W - 180.0,
            ly = 14.0 + 12.0 * i as f64,
            l = esc(s.label),
        );
    }
    svg.push_str("</svg>");
    svg
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
        );
        assert_eq!(svg.matches("<polyline").count(), 2);
        assert!(svg.contains("&lt;b&gt;"));
        assert!(line_chart("x", &[1], &[]).contains("Sin datos"));
    }
}
