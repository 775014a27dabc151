//! `tessera-run --profile`'s report: where a call's time goes, kernel by kernel, the slowest
//! first, from the marks `tessera-profile-kernels` put after each kernel.

use crate::run::ms;
use std::fmt::Write as _;
use std::time::Duration;
use tessera::mlir::cpu::runtime::kernel_profile::KernelTime;

/// Kernels below this share of the total are summed into one line.
const SMALL_SHARE: f64 = 0.002;

/// The report of `kernels` (by index, as [`kernel_profile::take`] gives them) over `calls`
/// calls, each described by its label in `labels`: time per call, share of the total, runs
/// per call, label.
///
/// [`kernel_profile::take`]: tessera::mlir::cpu::runtime::kernel_profile::take
pub fn profile_report(kernels: &[KernelTime], labels: &[String], calls: usize) -> String {
    let calls = calls.max(1) as u32;
    let total: Duration = kernels.iter().map(|k| k.time).sum();
    let mut ranked: Vec<(usize, &KernelTime)> = kernels
        .iter()
        .enumerate()
        .filter(|(_, k)| k.runs > 0)
        .collect();
    ranked.sort_by(|a, b| b.1.time.cmp(&a.1.time).then(a.0.cmp(&b.0)));
    let share = |time: Duration| time.as_secs_f64() / total.as_secs_f64().max(f64::MIN_POSITIVE);
    let mut report = format!(
        "kernel profile: {} kernel(s), {} per call over {calls} call(s) (the marks included)\n  time/call   share  runs/call  kernel\n",
        ranked.len(),
        ms(total / calls)
    );
    let (large, small): (Vec<_>, Vec<_>) = ranked
        .into_iter()
        .partition(|(_, k)| share(k.time) >= SMALL_SHARE);
    for (index, kernel) in large {
        let label = labels.get(index).map_or("(unlabelled)", String::as_str);
        let _ = writeln!(
            report,
            "  {:>10}  {:>5.1}%  {:>9}  {label}",
            ms(kernel.time / calls),
            100.0 * share(kernel.time),
            runs_per_call(kernel.runs, calls),
        );
    }
    if !small.is_empty() {
        let time: Duration = small.iter().map(|(_, k)| k.time).sum();
        let _ = writeln!(
            report,
            "  {:>10}  {:>5.1}%  {:>9}  {} kernel(s) under {:.1}% each",
            ms(time / calls),
            100.0 * share(time),
            "",
            small.len(),
            100.0 * SMALL_SHARE
        );
    }
    report
}

/// `runs` over `calls`, as a whole number where it is one.
fn runs_per_call(runs: u64, calls: u32) -> String {
    if runs % u64::from(calls) == 0 {
        (runs / u64::from(calls)).to_string()
    } else {
        format!("{:.2}", runs as f64 / f64::from(calls))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kernel(micros: u64, runs: u64) -> KernelTime {
        KernelTime {
            time: Duration::from_micros(micros),
            runs,
        }
    }

    #[test]
    fn kernels_are_ranked_slowest_first_and_small_ones_summed() {
        let kernels = [kernel(1000, 2), kernel(9000, 2), kernel(1, 2), kernel(0, 0)];
        let labels: Vec<String> = ["@f: %a", "@f: %b", "@f: %c", "@f: %d"]
            .map(String::from)
            .to_vec();
        let report = profile_report(&kernels, &labels, 2);
        let lines: Vec<&str> = report.lines().collect();
        assert!(
            lines[0].contains("3 kernel(s), 5.000 ms per call over 2 call(s)"),
            "{report}"
        );
        assert!(
            lines[2].ends_with("@f: %b") && lines[2].contains("4.500 ms"),
            "{report}"
        );
        assert!(
            lines[2].contains("90.0%") && lines[2].contains(" 1  "),
            "{report}"
        );
        assert!(
            lines[3].ends_with("@f: %a") && lines[3].contains("10.0%"),
            "{report}"
        );
        assert!(
            lines[4].ends_with("1 kernel(s) under 0.2% each"),
            "{report}"
        );
        assert!(
            !report.contains("%d"),
            "a kernel that never ran is left out: {report}"
        );
    }
}
