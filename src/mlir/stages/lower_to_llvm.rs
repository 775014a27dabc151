//! `tessera-lower-to-llvm`: loops, vectors, math and memrefs to the LLVM dialect. Allocation
//! goes through `_mlir_memref_to_llvm_alloc`/`_free` (generic functions) so the host can count
//! it; math without an LLVM intrinsic (`tanh`, `erf`) calls libm.
//! Precondition: bufferized MLIR.

use crate::diag::Diagnostic;
use crate::mlir::stages::{expect_mlir, run_upstream, Program, Stage, StageEnv, StageOptions};

/// Lowering to the LLVM dialect as a stage.
pub struct LowerToLlvm;

/// The upstream passes the stage runs (libm before vector-to-llvm, as it must be).
pub const PASSES: &str = "scf-forall-to-for,convert-linalg-to-loops,convert-vector-to-scf,expand-strided-metadata,lower-affine,\
                          convert-scf-to-cf,convert-math-to-llvm,convert-math-to-libm,convert-vector-to-llvm,\
                          convert-arith-to-llvm,convert-index-to-llvm,finalize-memref-to-llvm{use-generic-functions},\
                          convert-cf-to-llvm,convert-func-to-llvm,reconcile-unrealized-casts";

impl Stage for LowerToLlvm {
    fn name(&self) -> &'static str {
        "tessera-lower-to-llvm"
    }

    fn summary(&self) -> &'static str {
        "Lower loops, vectors, math and memrefs to the LLVM dialect. Input: bufferized MLIR."
    }

    fn run<'c>(
        &self,
        program: Program<'c>,
        env: &StageEnv<'c, '_>,
        _: &StageOptions,
    ) -> Result<Program<'c>, Vec<Diagnostic>> {
        let mut module = expect_mlir(program, self.name())?;
        run_upstream(env, &mut module, PASSES, self.name())?;
        Ok(Program::Mlir(module))
    }
}
