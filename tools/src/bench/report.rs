//! The benchmark's results as a text table and as JSON (the machine, the commit, the settings
//! and one record per workload, mode and thread count).

use crate::bench::limits::Limits;
use crate::bench::workloads::{Bound, Workload};
use crate::bench::Measurement;
use std::fmt::Write;
use std::time::Duration;

/// What a run was asked to do, as the JSON records it.
#[derive(Clone, Debug)]
pub struct Settings {
    /// Seconds of timed calls per workload and mode.
    pub time_per_mode_s: f64,
    /// The thread counts.
    pub threads: Vec<usize>,
    /// The modes, as written (`-O3 --no-fusion`).
    pub modes: Vec<String>,
    /// The user model, when one was given.
    pub model: Option<String>,
    /// The tuning cache the CPU compiles used, if any.
    pub tuning_cache: Option<String>,
}

/// A table: per workload its title, then a line per mode; `tuning_cache` is the cache the
/// compiles used, if any.
pub fn table(
    workloads: &[Workload],
    results: &[Measurement],
    limits: &Limits,
    tuning_cache: Option<&str>,
) -> String {
    let mut text = format!(
        "machine: {}, {} f32 lanes; one core: FMA peak {:.1} GFLOP/s, copy {:.1} GB/s\n",
        cpu_name(),
        crate::bench::limits::lanes(),
        limits.fma_gflops,
        limits.copy_gbps
    );
    let _ = writeln!(
        text,
        "tuning cache: {}",
        tuning_cache.unwrap_or("none (the strategy's choices)")
    );
    for workload in workloads {
        let _ = writeln!(text, "\n{} — {}", workload.id, workload.title);
        let _ = writeln!(
            text,
            "  {:<26} {:>10} {:>10} {:>10} {:>11} {:>11} {:>10} {:>9} {:>11} {:>7}",
            "mode",
            "median",
            "p10",
            "p90",
            "compile",
            "first call",
            "rate",
            "of limit",
            "peak bytes",
            "kernels"
        );
        for m in results.iter().filter(|m| m.workload == workload.id) {
            let rate = match m.bound {
                Bound::Compute => format!("{:.2} GF/s", m.gflops()),
                Bound::Memory => format!("{:.2} GB/s", m.gbps()),
            };
            let (_, limit) = m.floor(limits);
            let _ = writeln!(
                text,
                "  {:<26} {:>10} {:>10} {:>10} {:>11} {:>11} {:>10} {:>5.1}% {:<3} {:>11} {:>7}",
                m.label(),
                ms(m.latency.median),
                ms(m.latency.p10),
                ms(m.latency.p90),
                ms(m.compile_time()),
                ms(m.first_call),
                rate,
                100.0 * m.fraction_of_limit(limits),
                limit,
                m.peak_bytes,
                m.kernels
            );
        }
    }
    text
}

/// The JSON document of a run; `compile_scaling`, when the `compile` workload ran, is its
/// JSON array (`compile_scaling::json`).
pub fn json(
    workloads: &[Workload],
    results: &[Measurement],
    limits: &Limits,
    settings: &Settings,
    compile_scaling: Option<&str>,
) -> String {
    let mut records = Vec::new();
    for m in results {
        let title = workloads
            .iter()
            .find(|w| w.id == m.workload)
            .map_or("", |w| w.title.as_str());
        let stages: Vec<String> = m
            .compile
            .iter()
            .map(|s| {
                format!(
                    "{{\"name\": {}, \"ms\": {}}}",
                    quote(&s.name),
                    number(millis(s.time))
                )
            })
            .collect();
        let (floor, limit) = m.floor(limits);
        records.push(format!(
            "    {{\"workload\": {}, \"title\": {}, \"mode\": {}, \"threads\": {}, \"median_ms\": {}, \"p10_ms\": {}, \"p90_ms\": {}, \"runs\": {}, \"compile_ms\": {}, \"compile_stages\": [{}], \"first_call_ms\": {}, \"flops\": {}, \"bytes\": {}, \"gflops\": {}, \"gbps\": {}, \"limit\": {}, \"limit_ms\": {}, \"fraction_of_limit\": {}, \"peak_bytes\": {}, \"kernels\": {}}}",
            quote(&m.workload),
            quote(title),
            quote(&m.mode.label()),
            m.threads,
            number(millis(m.latency.median)),
            number(millis(m.latency.p10)),
            number(millis(m.latency.p90)),
            m.latency.runs,
            number(millis(m.compile_time())),
            stages.join(", "),
            number(millis(m.first_call)),
            m.flops,
            m.bytes,
            number(m.gflops()),
            number(m.gbps()),
            quote(limit),
            number(millis(floor)),
            number(m.fraction_of_limit(limits)),
            m.peak_bytes,
            m.kernels
        ));
    }
    let modes: Vec<String> = settings.modes.iter().map(|m| quote(m)).collect();
    let threads: Vec<String> = settings.threads.iter().map(usize::to_string).collect();
    let threads = format!("[{}]", threads.join(", "));
    format!(
        "{{\n  \"machine\": {{\"cpu\": {}, \"cores\": {}, \"f32_lanes\": {}, \"fma_peak_gflops\": {}, \"copy_gbps\": {}}},\n  \"commit\": {},\n  \"settings\": {{\"time_per_mode_s\": {}, \"threads\": {}, \"modes\": [{}], \"model\": {}, \"tuning_cache\": {}}},\n  \"results\": [\n{}\n  ],\n  \"compile_scaling\": {}\n}}\n",
        quote(&cpu_name()),
        std::thread::available_parallelism().map_or(1, |n| n.get()),
        crate::bench::limits::lanes(),
        number(limits.fma_gflops),
        number(limits.copy_gbps),
        quote(&commit()),
        number(settings.time_per_mode_s),
        threads,
        modes.join(", "),
        settings.model.as_deref().map_or("null".to_string(), quote),
        settings.tuning_cache.as_deref().map_or("null".to_string(), quote),
        records.join(",\n"),
        compile_scaling.unwrap_or("null")
    )
}

/// The CPU's model name (from /proc/cpuinfo), or `unknown`.
pub fn cpu_name() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|text| {
            text.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, name)| name.trim().to_string())
        })
        .unwrap_or_else(|| "unknown".to_string())
}

/// The commit of the working directory's repository (`git describe --always --dirty`), or
/// `unknown` outside one.
fn commit() -> String {
    std::process::Command::new("git")
        .args(["describe", "--always", "--dirty", "--abbrev=12"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "unknown".to_string())
}

fn millis(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn ms(d: Duration) -> String {
    let v = millis(d);
    if v >= 100.0 {
        format!("{v:.1} ms")
    } else if v >= 1.0 {
        format!("{v:.3} ms")
    } else {
        format!("{:.1} us", v * 1e3)
    }
}

/// A JSON number (finite; others become null).
pub fn number(v: f64) -> String {
    if v.is_finite() {
        format!("{v:.6}")
    } else {
        "null".to_string()
    }
}

/// A JSON string.
pub fn quote(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_are_escaped() {
        assert_eq!(quote("a\"b\\c\nd\u{1}"), "\"a\\\"b\\\\c\\nd\\u0001\"");
        assert_eq!(number(f64::NAN), "null");
        assert_eq!(number(1.5), "1.500000");
    }
}
