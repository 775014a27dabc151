//! Runs a pipeline step by step, with the instrumentation MLIR's C API lacks: IR printed
//! before or after chosen steps (headed as MLIR does), a numbered dump of every step to a
//! folder, per-step timing, and a reproducer when a step fails.

use crate::crash::{reproducer_path, Activity};
use crate::diag::Diagnostic;
use crate::ir::Module;
use crate::mlir::bridge::context::MlirContext;
use crate::mlir::pipeline::stages::{expect_mlir, run_upstream, verify_step, Program, StageEnv};
use crate::mlir::pipeline::{Element, Pipeline};
use crate::source::SourceFile;
use melior::ir::Module as MlirModule;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Which steps to print the IR of.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Selection {
    /// None.
    #[default]
    None,
    /// Every step.
    All,
    /// The steps with these names.
    Named(Vec<String>),
}

impl Selection {
    fn includes(&self, name: &str) -> bool {
        match self {
            Selection::None => false,
            Selection::All => true,
            Selection::Named(names) => names.iter().any(|n| n == name),
        }
    }
}

/// What to record while a pipeline runs.
#[derive(Default)]
pub struct Instrumentation {
    /// Print the IR before these steps.
    pub print_before: Selection,
    /// Print the IR after these steps.
    pub print_after: Selection,
    /// Write the input and the IR after every step as numbered files here.
    pub dump_dir: Option<PathBuf>,
}

/// How long one step took.
#[derive(Clone, Debug, PartialEq)]
pub struct StepTime {
    /// The step's name.
    pub name: String,
    /// Its wall time.
    pub time: Duration,
}

/// A step that failed: its diagnostics, and where its reproducer was written.
#[derive(Debug)]
pub struct PipelineFailure {
    /// The failing step's name.
    pub step: String,
    /// What went wrong, located in the source where possible.
    pub diagnostics: Vec<Diagnostic>,
    /// The pipeline's input with its steps up to the failing one.
    pub reproducer: Option<PathBuf>,
}

/// Runs `pipeline` on `module`'s graph as a compiler does, without dumps: the MLIR it
/// leaves, and the time of every step. `Err` holds the failing step's diagnostics.
pub fn lower<'c>(
    context: &'c MlirContext,
    module: &Module,
    file: &SourceFile,
    pipeline: &Pipeline,
) -> Result<(MlirModule<'c>, Vec<StepTime>), Vec<Diagnostic>> {
    let env = StageEnv { context, file };
    let (program, steps) = run_pipeline(
        Program::Graph(module.clone()),
        pipeline,
        &env,
        &Instrumentation::default(),
        &mut std::io::sink(),
    )
    .map_err(|failure| failure.diagnostics)?;
    match program {
        Program::Mlir(lowered) => Ok((lowered, steps)),
        Program::Graph(_) => Err(vec![Diagnostic::unlocated(format!(
            "the pipeline {pipeline} does not produce MLIR"
        ))]),
    }
}

/// Runs `pipeline` on `program`, printing IR dumps to `log`; each step's result is verified
/// where `verifies_result` says.
pub fn run_pipeline<'c>(
    mut program: Program<'c>,
    pipeline: &Pipeline,
    env: &StageEnv<'c, '_>,
    instrumentation: &Instrumentation,
    log: &mut dyn Write,
) -> Result<(Program<'c>, Vec<StepTime>), PipelineFailure> {
    let mut times = Vec::with_capacity(pipeline.elements.len());
    let dumped = |index: usize, name: &str, program: &Program<'_>| match &instrumentation.dump_dir {
        Some(dir) => dump(dir, index, name, program).map_err(|diagnostic| PipelineFailure {
            step: name.to_string(),
            diagnostics: vec![diagnostic],
            reproducer: None,
        }),
        None => Ok(()),
    };
    dumped(0, "input", &program)?;
    let input = ReproducerInput::of(&program);
    let from_graph = matches!(program, Program::Graph(_));
    for (index, element) in pipeline.elements.iter().enumerate() {
        let name = element.name();
        let header = format!("{name} ({element})");
        if instrumentation.print_before.includes(&name) {
            let _ = write!(
                log,
                "// -----// IR Dump Before {header} //----- //\n{}\n",
                program.text()
            );
        }
        let activity = input.activity(&pipeline.elements[..=index], env, instrumentation);
        let start = Instant::now();
        let outcome = match element {
            Element::Stage(stage, options) => stage.run(program, env, options),
            Element::Upstream(text) => expect_mlir(program, &name).and_then(|mut module| {
                run_upstream(env, &mut module, text, &name).map(|()| Program::Mlir(module))
            }),
        }
        .and_then(|program| {
            let read_next = index + 1 < pipeline.elements.len()
                && !instrumentation.print_after.includes(&name)
                && instrumentation.dump_dir.is_none();
            match verifies_result(element, from_graph, read_next, env.context.verify_each()) {
                true => verify_step(env, program, &name),
                false => Ok(program),
            }
        });
        times.push(StepTime {
            name: name.clone(),
            time: start.elapsed(),
        });
        program = match outcome {
            Ok(program) => program,
            Err(diagnostics) => {
                return Err(PipelineFailure {
                    step: name,
                    diagnostics,
                    reproducer: activity.save_reproducer(),
                });
            }
        };
        drop(activity);
        if instrumentation.print_after.includes(&name) {
            let _ = write!(
                log,
                "// -----// IR Dump After {header} //----- //\n{}\n",
                program.text()
            );
        }
        dumped(index + 1, &name, &program)?;
    }
    Ok((program, times))
}

/// Whether the result of the step `element` is verified (`verify_step`), in a pipeline whose
/// input came in as a `.tsr` graph (`from_graph`), when only a next step reads it
/// (`read_next`: neither the last step, whose result goes to LLVM or is printed, nor one
/// printed or dumped). Not when tessera made it from tessera's own IR: a stage's result, on
/// a graph's program, that the next step reads. Those are valid by construction: the test
/// suite and its fuzzers (debug builds, `verify_each`) verify after every pass of every
/// stage, and verifying them in release builds was 80 M of the 2254 M instructions of the
/// two-layer GPT block's -O3 compile. MLIR input and upstream passes are verified after
/// every step.
fn verifies_result(
    element: &Element,
    from_graph: bool,
    read_next: bool,
    verify_each: bool,
) -> bool {
    verify_each || !from_graph || !read_next || matches!(element, Element::Upstream(_))
}

/// Writes `program` as `DIR/NN-name.{tsr,mlir}`, or says why it cannot.
fn dump(dir: &Path, index: usize, name: &str, program: &Program<'_>) -> Result<(), Diagnostic> {
    let extension = match program {
        Program::Graph(_) => "tsr",
        Program::Mlir(_) => "mlir",
    };
    let path = dir.join(format!("{index:02}-{name}.{extension}"));
    std::fs::create_dir_all(dir)
        .and_then(|()| std::fs::write(&path, program.text()))
        .map_err(|e| Diagnostic::unlocated(format!("cannot write '{}': {e}", path.display())))
}

/// The pipeline's input as text, printed once: the reproducer of a step that fails or
/// crashes is this input with the pipeline's steps up to that one. Printing each step's own
/// input instead (the smallest reproducer) cost a whole module's printing per step, 5% of
/// compiling the two-layer GPT block; `--dump-dir` still writes every step's input.
struct ReproducerInput {
    text: String,
    extension: &'static str,
}

impl ReproducerInput {
    fn of(program: &Program<'_>) -> ReproducerInput {
        let extension = match program {
            Program::Graph(_) => "tsr",
            Program::Mlir(_) => "mlir",
        };
        ReproducerInput {
            text: program.text(),
            extension,
        }
    }

    /// The crash report of the last of `steps`: its name, the model's file, and its
    /// reproducer, saved when the step fails or crashes.
    fn activity(
        &self,
        steps: &[Element],
        env: &StageEnv<'_, '_>,
        instrumentation: &Instrumentation,
    ) -> Activity {
        let name = steps.last().map(Element::name).unwrap_or_default();
        let path = reproducer_path(instrumentation.dump_dir.as_deref(), &name, self.extension);
        let pipeline: Vec<String> = steps.iter().map(ToString::to_string).collect();
        let text = format!(
            "// tessera reproducer: the pipeline below fails in '{name}' on this input.\n// Run: tessera-opt {} --pass-pipeline='builtin.module({})'\n{}",
            path.display(),
            pipeline.join(","),
            self.text
        );
        Activity::enter(&name, env.file.name(), Some((&path, text)))
    }
}

/// A timing report like MLIR's `--mlir-timing`, or JSON (`{"total_ms": ..., "steps": [...]}`).
pub fn timing_report(times: &[StepTime], json: bool) -> String {
    let total: Duration = times.iter().map(|t| t.time).sum();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    if json {
        let steps: Vec<String> = times
            .iter()
            .map(|t| format!("{{\"name\": \"{}\", \"ms\": {:.3}}}", t.name, ms(t.time)))
            .collect();
        return format!(
            "{{\"total_ms\": {:.3}, \"steps\": [{}]}}\n",
            ms(total),
            steps.join(", ")
        );
    }
    let mut out = String::from(
        "===-------------------------------------------------------------------------===\n",
    );
    out.push_str("                         ... Execution time report ...\n");
    out.push_str(
        "===-------------------------------------------------------------------------===\n",
    );
    out.push_str(&format!(
        "  Total Execution Time: {:.4} seconds\n\n  ----Wall Time----  ----Name----\n",
        total.as_secs_f64()
    ));
    for t in times {
        let share = if total.is_zero() {
            0.0
        } else {
            100.0 * t.time.as_secs_f64() / total.as_secs_f64()
        };
        out.push_str(&format!(
            "    {:.4} ({share:5.1}%)  {}\n",
            t.time.as_secs_f64(),
            t.name
        ));
    }
    out.push_str(&format!("    {:.4} (100.0%)  Total\n", total.as_secs_f64()));
    out
}

#[cfg(test)]
mod tests {
    use super::verifies_result;
    use crate::mlir::pipeline::stages::{stage, StageOptions};
    use crate::mlir::pipeline::Element;

    #[test]
    fn only_stages_on_graph_input_read_by_the_next_step_go_unverified() {
        let tile = Element::Stage(
            stage("tessera-tile").expect("a stage"),
            StageOptions::default(),
        );
        let canonicalize = Element::Upstream("canonicalize".to_string());
        assert!(!verifies_result(&tile, true, true, false));
        assert!(verifies_result(&tile, true, false, false), "last or shown");
        assert!(verifies_result(&tile, false, true, false), "MLIR input");
        assert!(verifies_result(&tile, true, true, true), "verify_each");
        assert!(verifies_result(&canonicalize, true, true, false));
    }
}
