//! One trial of `tessera-tune`: the model compiled with a candidate tuning cache and timed in a
//! child `tessera-run` (a candidate that crashes the compiler or hangs costs the trial, never
//! the tuner), its outputs checked against the reference interpreter's before its time
//! counts.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use tessera::exec::compare::{compare, Tolerance};
use tessera::exec::npy::read_npy;
use tessera::exec::tensor::Tensor;

/// How a trial runs the model.
pub struct Runner {
    /// The `tessera-run` binary.
    pub binary: PathBuf,
    /// The model and the flags that choose what runs (`--entry`, `--input-shape`, `--threads`).
    pub model_args: Vec<String>,
    /// A folder of the tuner's own for outputs and candidate caches.
    pub scratch: PathBuf,
    /// The reference interpreter's results on the inputs every trial uses.
    pub reference: Vec<Tensor>,
    /// The tolerance of each comparison.
    pub tolerance: Tolerance,
    /// The largest difference from the reference the strategy's own code makes (a candidate
    /// may differ as much, twice over, where the plain tolerance is tighter).
    pub strategy_error: f64,
    /// The strategy's own outputs: a candidate that misses the plain tolerance must have its
    /// NaNs and infinities where they have theirs (the comparison leaves those out of its
    /// largest difference).
    pub strategy_outputs: Vec<Tensor>,
    /// Calls timed per trial.
    pub calls: usize,
    /// How long one trial may take before it is stopped.
    pub limit: Duration,
}

/// What a trial measured.
#[derive(Clone, Copy, Debug)]
pub struct Timing {
    /// The median call, in milliseconds.
    pub median_ms: f64,
    /// The largest difference of its outputs from the reference.
    pub max_abs: f64,
}

/// Why a trial does not count.
#[derive(Clone, Debug)]
pub enum Rejected {
    /// It failed to compile or run (the child's last words).
    Failed(String),
    /// It ran past the trial's time limit.
    TimedOut,
    /// Its outputs disagree with the reference.
    Wrong(String),
}

impl std::fmt::Display for Rejected {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Rejected::Failed(why) => write!(f, "failed: {why}"),
            Rejected::TimedOut => write!(f, "ran past its time limit"),
            Rejected::Wrong(why) => write!(f, "disagrees with the reference: {why}"),
        }
    }
}

/// The median of a `steady call (N runs): median X ms, ...` line of tessera-run.
fn median_ms(stdout: &str) -> Option<f64> {
    let line = stdout.lines().find(|l| l.starts_with("steady call"))?;
    let value = line.split("median ").nth(1)?.split(' ').next()?;
    value.parse().ok()
}

impl Runner {
    /// The outputs of the last trial.
    pub fn last_outputs(&self) -> Result<Vec<Tensor>, String> {
        let dir = self.scratch.join("outputs");
        (0..self.reference.len())
            .map(|i| {
                let path = dir.join(format!("out{i}.npy"));
                let bytes = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
                read_npy(&bytes).map_err(|e| format!("{}: {e}", path.display()))
            })
            .collect()
    }

    /// Runs the model compiled with the tuning cache `cache` (none: the strategy alone).
    pub fn trial(&self, cache: Option<&Path>, calls: usize) -> Result<Timing, Rejected> {
        let outputs = self.scratch.join("outputs");
        let _ = std::fs::remove_dir_all(&outputs);
        let mut command = Command::new(&self.binary);
        command
            .args(&self.model_args)
            .arg("--output-dir")
            .arg(&outputs)
            .arg("--repeat")
            .arg(calls.to_string())
            .env(tessera::mlir::cpu::tuning::cache::CACHE_VARIABLE, "")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let Some(cache) = cache {
            command.arg("--tuning-cache").arg(cache);
        }
        let mut child = command.spawn().map_err(|e| {
            Rejected::Failed(format!("cannot start {}: {e}", self.binary.display()))
        })?;
        // Read both pipes on threads, so that a child writing much cannot block on them.
        let mut stdout = child.stdout.take();
        let mut stderr = child.stderr.take();
        let out_reader = std::thread::spawn(move || {
            let mut text = String::new();
            if let Some(pipe) = stdout.as_mut() {
                let _ = pipe.read_to_string(&mut text);
            }
            text
        });
        let err_reader = std::thread::spawn(move || {
            let mut text = String::new();
            if let Some(pipe) = stderr.as_mut() {
                let _ = pipe.read_to_string(&mut text);
            }
            text
        });
        let start = Instant::now();
        let status = loop {
            match child.try_wait() {
                Ok(Some(status)) => break Some(status),
                Ok(None) if start.elapsed() > self.limit => {
                    let _ = child.kill();
                    let _ = child.wait();
                    break None;
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(2)),
                Err(e) => return Err(Rejected::Failed(e.to_string())),
            }
        };
        let stdout = out_reader.join().unwrap_or_default();
        let stderr = err_reader.join().unwrap_or_default();
        let Some(status) = status else {
            return Err(Rejected::TimedOut);
        };
        if !status.success() {
            let last = stderr
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("no message")
                .to_string();
            return Err(Rejected::Failed(format!("{status}: {last}")));
        }
        let median_ms = median_ms(&stdout)
            .ok_or_else(|| Rejected::Failed("tessera-run printed no timing".into()))?;
        let max_abs = self.check()?;
        Ok(Timing { median_ms, max_abs })
    }

    /// The largest difference between the last trial's outputs and the reference, or why
    /// they disagree.
    fn check(&self) -> Result<f64, Rejected> {
        let outputs = self.last_outputs().map_err(Rejected::Failed)?;
        let mut max_abs: f64 = 0.0;
        for (i, (got, want)) in outputs.iter().zip(&self.reference).enumerate() {
            let c = compare(got, want, self.tolerance);
            let allowed = 2.0 * self.strategy_error;
            // The strategy's own trials (before its outputs are known) are what the others
            // are held to.
            let baseline = self.strategy_outputs.is_empty();
            let within_strategy = got.ty == want.ty
                && (baseline
                    || (c.max_abs <= allowed
                        && self
                            .strategy_outputs
                            .get(i)
                            .is_some_and(|strategy| same_non_finite(got, strategy))));
            if !(c.pass || within_strategy) {
                return Err(Rejected::Wrong(format!(
                    "output {i}: max abs error {:.3e} ({}, and the strategy's code errs by {:.3e})",
                    c.max_abs, self.tolerance, self.strategy_error
                )));
            }
            max_abs = max_abs.max(c.max_abs);
        }
        Ok(max_abs)
    }
}

/// Whether `a` and `b` (of one type) have NaNs and infinities at the same places, the same
/// infinities.
fn same_non_finite(a: &Tensor, b: &Tensor) -> bool {
    a.len() == b.len()
        && (0..a.len()).all(|i| {
            let (x, y) = (a.get_f64(i), b.get_f64(i));
            if x.is_finite() && y.is_finite() {
                return true;
            }
            (x.is_nan() && y.is_nan()) || x == y
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_median_of_tessera_run() {
        let out = "@f on 2 input(s), -O3\ncompile: 12.000 ms\nsteady call (20 runs): median 0.018 ms, p10 0.015 ms, p90 0.027 ms\n";
        assert_eq!(median_ms(out), Some(0.018));
        assert_eq!(median_ms("compile: 1 ms\n"), None);
    }

    #[test]
    fn non_finite_values_must_stand_where_the_strategys_do() {
        let f32s = |values: Vec<f64>| Tensor {
            ty: tessera::types::TensorType::new(
                vec![values.len() as u64],
                tessera::types::ElementType::F32,
            ),
            data: tessera::exec::tensor::TensorData::Float(values),
        };
        let strategy = f32s(vec![1.0, f64::NAN, f64::INFINITY]);
        assert!(same_non_finite(
            &f32s(vec![2.0, f64::NAN, f64::INFINITY]),
            &strategy
        ));
        assert!(!same_non_finite(
            &f32s(vec![f64::NAN, f64::NAN, f64::INFINITY]),
            &strategy
        ));
        assert!(!same_non_finite(
            &f32s(vec![1.0, 0.0, f64::INFINITY]),
            &strategy
        ));
        assert!(!same_non_finite(
            &f32s(vec![1.0, f64::NAN, f64::NEG_INFINITY]),
            &strategy
        ));
    }
}
