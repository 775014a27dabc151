//! `tessera-bufferize`: one-shot bufferization across function boundaries with identity
//! layouts (compiled functions take plain strided memrefs); results become caller-owned
//! out-parameters (no allocation for them); temporaries are freed.
//! Precondition: MLIR on tensors.

use crate::diag::Diagnostic;
use crate::mlir::stages::{expect_mlir, run_upstream, Program, Stage, StageEnv, StageOptions};
use crate::mlir::walk::walk;

/// Bufferization as a stage.
pub struct Bufferize;

/// One-shot bufferization.
const BUFFERIZE: &str = "one-shot-bufferize{bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map}";

/// Results as out-parameters, the buffer computing each result being the out-parameter itself
/// (no copy) ...
const OUT_PARAMS_IN_PLACE: &str = "buffer-results-to-out-params{hoist-static-allocs}";

/// ... unless a result is a parameter or another result: MLIR 19 crashes hoisting those, so
/// then every result is copied into its out-parameter.
const OUT_PARAMS_COPIED: &str = "buffer-results-to-out-params";

/// Freeing temporaries.
const DEALLOCATE: &str = "buffer-deallocation-pipeline,convert-bufferization-to-memref";

impl Stage for Bufferize {
    fn name(&self) -> &'static str {
        "tessera-bufferize"
    }

    fn summary(&self) -> &'static str {
        "Bufferize across functions; results become out-parameters; temporaries are freed. Input: tensors."
    }

    fn run<'c>(
        &self,
        program: Program<'c>,
        env: &StageEnv<'c, '_>,
        _: &StageOptions,
    ) -> Result<Program<'c>, Vec<Diagnostic>> {
        let mut module = expect_mlir(program, self.name())?;
        run_upstream(env, &mut module, BUFFERIZE, self.name())?;
        let mut aliased = false;
        walk(&module, |op| {
            aliased |= op.name() == "func.return" && op.has_aliased_operands()
        });
        let out_params = if aliased {
            OUT_PARAMS_COPIED
        } else {
            OUT_PARAMS_IN_PLACE
        };
        run_upstream(env, &mut module, out_params, self.name())?;
        run_upstream(env, &mut module, DEALLOCATE, self.name())?;
        Ok(Program::Mlir(module))
    }
}
