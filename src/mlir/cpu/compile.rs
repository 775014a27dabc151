//! The whole CPU path in one call: a verified module through a pipeline (a preset, or one of
//! the user's) into the JIT, with the time of every step.

use crate::crash::Activity;
use crate::diag::Diagnostic;
use crate::exec::signature::Signature;
use crate::ir::Module;
use crate::mlir::bridge::context::MlirContext;
use crate::mlir::cpu::runtime::jit::{Jit, LlvmOptions};
use crate::mlir::pipeline::runner::{lower, StepTime};
use crate::mlir::pipeline::Pipeline;
use crate::source::{SourceFile, Span};
use std::time::Duration;

/// How long each step of a compilation took.
#[derive(Clone, Debug, Default)]
pub struct CompileTimes {
    /// Each step of the pipeline, then LLVM's (`llvm-translate`, `llvm-optimize`,
    /// `llvm-codegen`).
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

/// How LLVM compiles `module` after `pipeline`: at [`jit_opt_level`], its loops unrolled
/// unless the pipeline optimizes nothing itself (neither fuses, tiles, vectorizes nor
/// applies a schedule: -O0). Vectorized kernels need LLVM's unrolling (layer_norm → gelu
/// without it: 7.9 → 75 ms), but op-by-op loops barely gain from it and it is most of their
/// compile time (the two-layer GPT block at -O0: 1384 → 377 ms in LLVM). Vectorized modules
/// get LLVM's pipeline for vectorized kernels instead of its -O3 (`vectorizedKernelPipeline`
/// in llvm_backend.cpp); the others, whose loops LLVM must vectorize, LLVM's own.
pub fn jit_options(module: &Module, pipeline: &Pipeline) -> LlvmOptions {
    let optimizing = [
        "tessera-fuse",
        "tessera-tile",
        "tessera-vectorize",
        "tessera-apply-schedule",
    ]
    .iter()
    .any(|stage| pipeline.has_stage(stage));
    LlvmOptions {
        level: jit_opt_level(module, pipeline),
        unroll: optimizing,
        every_pass: false,
        vectorized: pipeline.has_stage("tessera-vectorize"),
    }
}

/// Runs `pipeline` on `module` (it must end in the LLVM dialect) and compiles the result into
/// a JIT as `options` say.
pub fn compile(
    context: &MlirContext,
    module: &Module,
    file: &SourceFile,
    pipeline: &Pipeline,
    options: LlvmOptions,
) -> Result<(Jit, CompileTimes), Vec<Diagnostic>> {
    let (lowered, steps) = lower(context, module, file, pipeline)?;
    let mut times = CompileTimes { steps };
    let activity = Activity::enter("llvm-jit", file.name(), None);
    let jit = Jit::new(&lowered, Signature::of_module(module), options);
    drop(activity);
    let jit = jit.ok_or_else(|| {
        vec![Diagnostic::error(
            Span::at(0),
            format!("the pipeline {pipeline} does not end in the LLVM dialect"),
        )]
    })?;
    times
        .steps
        .extend(jit.phase_times().map(|(name, time)| StepTime {
            name: name.into(),
            time,
        }));
    Ok((jit, times))
}
