//! `tessera-convert-to-linalg`: the graph becomes MLIR func/tensor/linalg/arith/math.
//! Precondition: a verified graph. Postcondition: a verified MLIR module, every op located.

use crate::diag::Diagnostic;
use crate::mlir::convert::convert_module;
use crate::mlir::stages::{stage_error, Program, Stage, StageEnv, StageOptions};

/// The conversion as a stage.
pub struct ConvertToLinalg;

impl Stage for ConvertToLinalg {
    fn name(&self) -> &'static str {
        "tessera-convert-to-linalg"
    }

    fn summary(&self) -> &'static str {
        "Convert the tessera graph to MLIR func/tensor/linalg/arith/math (decomposing first)."
    }

    fn takes_graph(&self) -> bool {
        true
    }

    fn run<'c>(
        &self,
        program: Program<'c>,
        env: &StageEnv<'c, '_>,
        _: &StageOptions,
    ) -> Result<Program<'c>, Vec<Diagnostic>> {
        match program {
            Program::Graph(module) => {
                convert_module(env.context, &module, env.file).map(Program::Mlir)
            }
            Program::Mlir(_) => Err(stage_error(self.name(), "the program is MLIR already")),
        }
    }
}
