//! The `compile` workload: how compile time grows with a model's size. Generated chains of
//! 50 to 800 ops (dense layers, each followed by tanh) are compiled in each mode, and every
//! stage's time is reported per op: a stage that is linear in the number of ops shows the
//! same milliseconds per op at every length.

use crate::bench::Mode;
use std::fmt::Write;
use std::time::Duration;
use tessera::frontend::load;
use tessera::mlir::cpu::compile::{compile, jit_options};
use tessera::mlir::pipeline::runner::StepTime;
use tessera::mlir::pipeline::Pipeline;
use tessera::mlir::MlirContext;
use tessera::source::SourceFile;

/// The id that selects this workload.
pub const ID: &str = "compile";

/// The chain lengths compiled, in ops of the model (before decomposition).
pub const CHAIN_OPS: [usize; 5] = [50, 100, 200, 400, 800];

/// A chain of `ops` ops on a [16, 32] activation: dense 32 (weights shared), then tanh, again
/// and again.
pub fn chain_model(ops: usize) -> String {
    let mut text = String::from(
        "func @f(%x: tensor<16x32xf32>, %w: tensor<32x32xf32>, %b: tensor<32xf32>) -> tensor<16x32xf32> {\n",
    );
    let mut previous = "%x".to_string();
    for i in 0..ops {
        let value = format!("%v{i}");
        let _ = if i % 2 == 0 {
            writeln!(
                text,
                "  {value} = nn.dense {previous}, %w, %b : tensor<16x32xf32>"
            )
        } else {
            writeln!(
                text,
                "  {value} = array.tanh {previous} : tensor<16x32xf32>"
            )
        };
        previous = value;
    }
    let _ = writeln!(text, "  return {previous} : tensor<16x32xf32>\n}}");
    text
}

/// One chain compiled in one mode.
#[derive(Clone, Debug)]
pub struct CompileRun {
    /// Ops in the chain.
    pub ops: usize,
    /// The mode.
    pub mode: Mode,
    /// Every step's time, the JIT last.
    pub steps: Vec<StepTime>,
}

impl CompileRun {
    /// The whole compile time.
    pub fn total(&self) -> Duration {
        self.steps.iter().map(|s| s.time).sum()
    }
}

/// Compiles every chain in every mode; `progress` is told each run before it starts.
pub fn measure(modes: &[Mode], mut progress: impl FnMut(&str)) -> Result<Vec<CompileRun>, String> {
    let mut runs = Vec::new();
    for &mode in modes {
        for ops in CHAIN_OPS {
            progress(&format!("compile {ops} ops {}", mode.label()));
            let file = SourceFile::new(format!("chain{ops}.tsr"), chain_model(ops));
            let module = load(&file, 0..file.text().len(), &crate::registry())
                .map_err(|_| format!("the generated chain of {ops} ops is invalid"))?;
            let pipeline = Pipeline::preset(mode.level, mode.fusion);
            let context = MlirContext::new();
            let (_, times) = compile(
                &context,
                &module,
                &file,
                &pipeline,
                jit_options(&module, &pipeline),
            )
            .map_err(|d| format!("the chain of {ops} ops does not compile: {d:?}"))?;
            runs.push(CompileRun {
                ops,
                mode,
                steps: times.steps,
            });
        }
    }
    Ok(runs)
}

/// The table: per mode and chain length, the total and each stage in milliseconds per op.
pub fn table(runs: &[CompileRun]) -> String {
    let mut out = String::from(
        "compile — generated chains of dense + tanh on [16, 32]: milliseconds per op, by stage\n",
    );
    let mut modes: Vec<Mode> = Vec::new();
    for run in runs {
        if !modes.contains(&run.mode) {
            modes.push(run.mode);
        }
    }
    for mode in modes {
        let of_mode: Vec<&CompileRun> = runs.iter().filter(|r| r.mode == mode).collect();
        let Some(first) = of_mode.first() else {
            continue;
        };
        let names: Vec<&str> = first.steps.iter().map(|s| s.name.as_str()).collect();
        let _ = write!(
            out,
            "  {:<16} {:>6} {:>10} {:>8}",
            mode.label(),
            "ops",
            "total",
            "ms/op"
        );
        for name in &names {
            let short = name.trim_start_matches("tessera-");
            let _ = write!(out, " {:>14}", short);
        }
        out.push('\n');
        for run in of_mode {
            let per_op = |d: Duration| d.as_secs_f64() * 1e3 / run.ops as f64;
            let _ = write!(
                out,
                "  {:<16} {:>6} {:>7.0} ms {:>8.3}",
                "",
                run.ops,
                run.total().as_secs_f64() * 1e3,
                per_op(run.total())
            );
            for step in &run.steps {
                let _ = write!(out, " {:>14.3}", per_op(step.time));
            }
            out.push('\n');
        }
    }
    out
}

/// The runs as a JSON array: `[{"ops": N, "mode": "-O3", "total_ms": .., "steps":
/// [{"name": .., "ms": .., "ms_per_op": ..}]}]`.
pub fn json(runs: &[CompileRun]) -> String {
    let items: Vec<String> = runs
        .iter()
        .map(|run| {
            let steps: Vec<String> = run
                .steps
                .iter()
                .map(|s| {
                    let ms = s.time.as_secs_f64() * 1e3;
                    format!(
                        "{{\"name\": {}, \"ms\": {ms:.3}, \"ms_per_op\": {:.4}}}",
                        crate::bench::report::quote(&s.name),
                        ms / run.ops as f64
                    )
                })
                .collect();
            format!(
                "{{\"ops\": {}, \"mode\": {}, \"total_ms\": {:.3}, \"steps\": [{}]}}",
                run.ops,
                crate::bench::report::quote(&run.mode.label()),
                run.total().as_secs_f64() * 1e3,
                steps.join(", ")
            )
        })
        .collect();
    format!("[{}]", items.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chains_have_the_ops_they_are_named_for() {
        let text = chain_model(50);
        assert_eq!(text.matches(" = nn.dense ").count(), 25);
        assert_eq!(text.matches(" = array.tanh ").count(), 25);
        let file = SourceFile::new("chain.tsr", text);
        assert!(load(&file, 0..file.text().len(), &crate::registry()).is_ok());
    }
}
