//! The default CPU pipeline from the linalg stage to the LLVM dialect, as named stages of
//! upstream passes, each run and timed on its own so that tools can report per-stage times.
//! Tiling, fusion and vectorization slot in as stages before `bufferize`.

use crate::diag::Diagnostic;
use crate::mlir::context::MlirContext;
use crate::mlir::located::located_diagnostics;
use crate::source::{SourceFile, Span};
use melior::ir::Module;
use melior::pass::PassManager;
use melior::utility::parse_pass_pipeline;
use std::time::{Duration, Instant};

/// A named stage: a sequence of upstream passes in MLIR's textual pipeline syntax.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stage {
    /// The stage's name (`tessera-bufferize`).
    pub name: &'static str,
    /// What it runs, inside `builtin.module(...)`.
    pub passes: &'static str,
}

/// One-shot bufferization across function boundaries with identity layouts (so compiled
/// functions take plain strided memrefs); results become caller-owned out-parameters
/// (no allocation for them); temporaries are freed.
pub const BUFFERIZE: Stage = Stage {
    name: "tessera-bufferize",
    passes: "one-shot-bufferize{bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map},\
             buffer-results-to-out-params{hoist-static-allocs},buffer-deallocation-pipeline,\
             convert-bufferization-to-memref",
};

/// linalg to loops, then everything to the LLVM dialect. Allocation goes through
/// `_mlir_memref_to_llvm_alloc`/`_free` (generic functions) so the host can count it; math
/// without an LLVM intrinsic (`tanh`, `erf`) calls libm.
pub const LOWER_TO_LLVM: Stage = Stage {
    name: "tessera-lower-to-llvm",
    passes: "convert-linalg-to-loops,lower-affine,expand-strided-metadata,convert-scf-to-cf,\
             convert-math-to-llvm,convert-math-to-libm,convert-arith-to-llvm,convert-index-to-llvm,\
             finalize-memref-to-llvm{use-generic-functions},convert-cf-to-llvm,convert-func-to-llvm,\
             reconcile-unrealized-casts",
};

/// The default CPU pipeline, in order.
pub const DEFAULT_CPU: &[Stage] = &[BUFFERIZE, LOWER_TO_LLVM];

/// The textual form of `stages`: `builtin.module(...)`, reusable as a `--pass-pipeline`.
pub fn pipeline_text(stages: &[Stage]) -> String {
    let passes: Vec<&str> = stages.iter().map(|s| s.passes).collect();
    format!("builtin.module({})", passes.join(","))
}

/// Runs `stages` on `module` one at a time, returning each stage's wall time. A failing
/// stage's MLIR diagnostics come back located in `file`, under the stage's name.
pub fn run_stages(
    context: &MlirContext,
    module: &mut Module<'_>,
    stages: &[Stage],
    file: &SourceFile,
) -> Result<Vec<(&'static str, Duration)>, Vec<Diagnostic>> {
    let mut times = Vec::with_capacity(stages.len());
    for stage in stages {
        let manager = PassManager::new(context.context());
        let text = format!("builtin.module({})", stage.passes);
        parse_pass_pipeline(manager.as_operation_pass_manager(), &text).map_err(|e| {
            vec![Diagnostic::error(
                Span::at(0),
                format!("stage '{}' has an invalid pipeline: {e}", stage.name),
            )]
        })?;
        context.take_diagnostics();
        let start = Instant::now();
        let outcome = manager.run(module);
        times.push((stage.name, start.elapsed()));
        if outcome.is_err() || !module.as_operation().verify() {
            let mut diagnostics = located_diagnostics(&context.take_diagnostics(), file);
            for d in &mut diagnostics {
                d.message = format!("in stage '{}': {}", stage.name, d.message);
            }
            if diagnostics.is_empty() {
                diagnostics.push(Diagnostic::error(
                    Span::at(0),
                    format!("stage '{}' failed", stage.name),
                ));
            }
            return Err(diagnostics);
        }
    }
    Ok(times)
}
