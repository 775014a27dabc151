//! The whole CPU path in one call: a verified module to MLIR, through the default pipeline,
//! into the JIT, with the time of every step.

use crate::diag::Diagnostic;
use crate::ir::Module;
use crate::mlir::context::MlirContext;
use crate::mlir::convert::convert_module;
use crate::mlir::jit::{Jit, Signature};
use crate::mlir::pipeline::{run_stages, Stage};
use crate::source::{SourceFile, Span};
use std::time::{Duration, Instant};

/// How long each step of a compilation took.
#[derive(Clone, Debug, Default)]
pub struct CompileTimes {
    /// Each step's name and wall time, in order: the conversion, every stage, the JIT.
    pub steps: Vec<(&'static str, Duration)>,
}

impl CompileTimes {
    /// The total.
    pub fn total(&self) -> Duration {
        self.steps.iter().map(|(_, d)| *d).sum()
    }
}

/// Converts `module`, lowers it through `stages` and compiles it into a JIT at LLVM
/// optimization level `opt_level`.
pub fn compile(
    context: &MlirContext,
    module: &Module,
    file: &SourceFile,
    stages: &[Stage],
    opt_level: u32,
) -> Result<(Jit, CompileTimes), Vec<Diagnostic>> {
    let mut times = CompileTimes::default();
    let start = Instant::now();
    let mut mlir = convert_module(context, module, file)?;
    times
        .steps
        .push(("tessera-convert-to-linalg", start.elapsed()));
    times
        .steps
        .extend(run_stages(context, &mut mlir, stages, file)?);
    let start = Instant::now();
    let jit = Jit::new(&mlir, Signature::of_module(module), opt_level).ok_or_else(|| {
        vec![Diagnostic::error(
            Span::at(0),
            "the lowered module does not translate to LLVM IR",
        )]
    })?;
    times.steps.push(("llvm-jit", start.elapsed()));
    Ok((jit, times))
}
