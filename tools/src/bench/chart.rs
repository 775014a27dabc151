//! The benchmark's bar chart (SVG): one panel per workload, a horizontal bar per mode (its
//! median latency), and a dashed line at the least time the machine's limits allow.

use crate::bench::limits::Limits;
use crate::bench::report::quote;
use crate::bench::workloads::Workload;
use crate::bench::Measurement;
use std::fmt::Write;

const WIDTH: f64 = 760.0;
const LABEL: f64 = 150.0;
const BAR: f64 = 18.0;
const GAP: f64 = 6.0;
const COLORS: [&str; 4] = ["#9e9e9e", "#5c8fd6", "#2f6f3e", "#c46a1b"];

/// The chart of `results`.
pub fn svg(workloads: &[Workload], results: &[Measurement], limits: &Limits) -> String {
    let mut body = String::new();
    let mut y = 30.0;
    for workload in workloads {
        let rows: Vec<&Measurement> = results
            .iter()
            .filter(|m| m.workload == workload.id)
            .collect();
        if rows.is_empty() {
            continue;
        }
        let floor = rows[0].floor(limits).0.as_secs_f64() * 1e3;
        let longest = rows
            .iter()
            .map(|m| m.latency.median.as_secs_f64() * 1e3)
            .fold(floor, f64::max);
        let scale = (WIDTH - LABEL - 110.0) / longest.max(1e-9);
        let _ = writeln!(
            body,
            "<text x=\"10\" y=\"{y}\" font-weight=\"bold\">{}</text>",
            escape(&format!("{} — {}", workload.id, workload.title))
        );
        y += 8.0;
        let top = y;
        for (i, m) in rows.iter().enumerate() {
            let value = m.latency.median.as_secs_f64() * 1e3;
            let _ = writeln!(
                body,
                "<text x=\"10\" y=\"{:.1}\">{}</text><rect x=\"{LABEL}\" y=\"{y:.1}\" width=\"{:.1}\" height=\"{BAR}\" fill=\"{}\"/><text x=\"{:.1}\" y=\"{:.1}\">{}</text>",
                y + BAR - 5.0,
                escape(&m.label()),
                (value * scale).max(1.0),
                COLORS[i % COLORS.len()],
                LABEL + value * scale + 6.0,
                y + BAR - 5.0,
                format_ms(value)
            );
            y += BAR + GAP;
        }
        let x = LABEL + floor * scale;
        let _ = writeln!(
            body,
            "<line x1=\"{x:.1}\" y1=\"{:.1}\" x2=\"{x:.1}\" y2=\"{:.1}\" stroke=\"#b00\" stroke-dasharray=\"4 3\"/><text x=\"{:.1}\" y=\"{:.1}\" fill=\"#b00\">limit {}</text>",
            top - 4.0,
            y - GAP + 4.0,
            x + 4.0,
            y + 10.0,
            format_ms(floor)
        );
        y += 36.0;
    }
    format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{y:.0}\" font-family=\"sans-serif\" font-size=\"12\">\n<title>{}</title>\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n{body}</svg>\n",
        escape("tessera-bench: median latency per mode (shorter is better); dashed: the machine's limit")
    )
}

fn format_ms(v: f64) -> String {
    if v >= 1.0 {
        format!("{v:.3} ms")
    } else {
        format!("{:.1} us", v * 1e3)
    }
}

/// Text for SVG (XML).
fn escape(text: &str) -> String {
    let quoted = quote(text);
    quoted[1..quoted.len() - 1]
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}
