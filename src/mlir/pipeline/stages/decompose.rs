//! `tessera-decompose`: ops that are compositions become the ops they are made of.
//! Precondition: a verified graph.

use crate::diag::Diagnostic;
use crate::mlir::pipeline::stages::{stage_error, Program, Stage, StageEnv, StageOptions};
use crate::transforms::decompose::decompose;

/// The graph-level decomposition as a stage.
pub struct DecomposeStage;

impl Stage for DecomposeStage {
    fn name(&self) -> &'static str {
        "tessera-decompose"
    }

    fn summary(&self) -> &'static str {
        "Replace ops that are compositions (most of nn) by array ops. Input: a tessera graph."
    }

    fn takes_graph(&self) -> bool {
        true
    }

    fn run<'c>(
        &self,
        program: Program<'c>,
        _: &StageEnv<'c, '_>,
        _: &StageOptions,
    ) -> Result<Program<'c>, Vec<Diagnostic>> {
        match program {
            Program::Graph(module) => decompose(&module)
                .map(Program::Graph)
                .map_err(|e| stage_error(self.name(), e)),
            Program::Mlir(_) => Err(stage_error(
                self.name(),
                "runs on the tessera graph, before tessera-convert-to-linalg",
            )),
        }
    }
}
