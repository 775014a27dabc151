//! The whole CPU path in one call: a verified module through a pipeline (a preset, or one of
//! the user's) into the JIT, with the time of every step.

use crate::crash::Activity;
use crate::diag::Diagnostic;
use crate::ir::Module;
use crate::mlir::context::MlirContext;
use crate::mlir::jit::{Jit, Signature};
use crate::mlir::pipeline::Pipeline;
use crate::mlir::runner::{run_pipeline, Instrumentation, StepTime};
use crate::mlir::stages::{Program, StageEnv};
use crate::source::{SourceFile, Span};
use std::time::{Duration, Instant};

/// How long each step of a compilation took.
#[derive(Clone, Debug, Default)]
pub struct CompileTimes {
    /// Each step of the pipeline, then the JIT (`llvm-jit`).
    pub steps: Vec<StepTime>,
}

impl CompileTimes {
    /// The total.
    pub fn total(&self) -> Duration {
        self.steps.iter().map(|s| s.time).sum()
    }
}

/// The most arithmetic operations per call of a module that LLVM compiles without
/// optimizing (see [`jit_opt_level`]).
pub const TINY_MODULE_FLOPS: u64 = 1 << 17;

/// The LLVM optimization level to JIT `module` at after `pipeline`: 3, except for tiny
/// modules (at most [`TINY_MODULE_FLOPS`] per call, summed over its functions) that
/// `tessera-vectorize` already vectorized, which get 0. Their vector code gains nothing from
/// LLVM's optimizer, and compiling is all their cost: the seed MLP at batch 1 compiles in 33
/// instead of 60 ms and runs in 3.0 µs either way (at batch 64, LLVM -O0 made it 8% slower;
/// unvectorized -O0 pipelines need LLVM's own vectorizer). Modules that do not decompose
/// are compiled at 3.
pub fn jit_opt_level(module: &Module, pipeline: &Pipeline) -> u32 {
    if let Some(level) = std::env::var("TESSERA_JIT_LEVEL")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        return level;
    }
    let Ok(decomposed) = crate::transforms::decompose::decompose(module) else {
        return 3;
    };
    let flops: u64 = (0..decomposed.funcs.len())
        .map(|f| decomposed.flops(f))
        .sum();
    if pipeline.has_stage("tessera-vectorize") && flops <= TINY_MODULE_FLOPS {
        0
    } else {
        3
    }
}

/// Runs `pipeline` on `module` (it must end in the LLVM dialect) and compiles the result into
/// a JIT at LLVM optimization level `opt_level`.
pub fn compile(
    context: &MlirContext,
    module: &Module,
    file: &SourceFile,
    pipeline: &Pipeline,
    opt_level: u32,
) -> Result<(Jit, CompileTimes), Vec<Diagnostic>> {
    let env = StageEnv { context, file };
    let (program, steps) = run_pipeline(
        Program::Graph(module.clone()),
        pipeline,
        &env,
        &Instrumentation::default(),
        &mut std::io::sink(),
    )
    .map_err(|failure| failure.diagnostics)?;
    let mut times = CompileTimes { steps };
    let Program::Mlir(lowered) = program else {
        return Err(vec![Diagnostic::error(
            Span::at(0),
            format!("the pipeline {pipeline} does not produce MLIR"),
        )]);
    };
    let start = Instant::now();
    let activity = Activity::enter("llvm-jit", file.name(), None);
    let jit = Jit::new(&lowered, Signature::of_module(module), opt_level);
    drop(activity);
    let jit = jit.ok_or_else(|| {
        vec![Diagnostic::error(
            Span::at(0),
            format!("the pipeline {pipeline} does not end in the LLVM dialect"),
        )]
    })?;
    times.steps.push(StepTime {
        name: "llvm-jit".into(),
        time: start.elapsed(),
    });
    Ok((jit, times))
}
