//! `tessera-fuse`: XLA's loop and input fusion on linalg: chains of elementwise ops become
//! one loop nest, and elementwise producers move into the reductions that consume them
//! (softmax, layer_norm). Producers shared by several consumers are duplicated only when they
//! are elementwise (cheap); a matmul or convolution is never recomputed.
//! Precondition: MLIR on tensors (before bufferization).

use crate::diag::Diagnostic;
use crate::mlir::stages::{expect_mlir, run_upstream, Program, Stage, StageEnv, StageOptions};

/// Fusion of elementwise producers into their consumers.
pub struct Fuse;

impl Stage for Fuse {
    fn name(&self) -> &'static str {
        "tessera-fuse"
    }

    fn summary(&self) -> &'static str {
        "Fuse elementwise producers into consumers (loop and input fusion). Input: linalg on tensors."
    }

    fn run<'c>(
        &self,
        program: Program<'c>,
        env: &StageEnv<'c, '_>,
        _: &StageOptions,
    ) -> Result<Program<'c>, Vec<Diagnostic>> {
        let mut module = expect_mlir(program, self.name())?;
        // Elementwise fusion moves payloads into consumers; canonicalize and cse remove the
        // producers left without uses and merge the identical constants decomposition made.
        run_upstream(
            env,
            &mut module,
            "linalg-fuse-elementwise-ops,canonicalize,cse",
            self.name(),
        )?;
        Ok(Program::Mlir(module))
    }
}
