//! `tessera-convert-to-linalg`: the graph becomes MLIR func/tensor/linalg/arith/math.
//! f16 and bf16 arithmetic is computed in f32 and rounded per op; their sums accumulate in f32.
//! Precondition: a verified graph. Postcondition: a verified MLIR module, every op located.

use crate::diag::Diagnostic;
use crate::mlir::bridge::convert::convert_module;
use crate::mlir::pipeline::stages::{
    run_upstream, stage_error, Program, Stage, StageEnv, StageOptions, NARROW_FLOATS_IN_F32,
};

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
                let mut converted = convert_module(env.context, &module, env.file)?;
                run_upstream(env, &mut converted, NARROW_FLOATS_IN_F32, self.name())?;
                Ok(Program::Mlir(converted))
            }
            Program::Mlir(_) => Err(stage_error(self.name(), "the program is MLIR already")),
        }
    }
}
