//! `tessera-vectorize`: linalg ops with static shapes (the tiles `tessera-tile` leaves) become
//! vector operations, with the transform dialect's `structured.vectorize`;
//! contractions become outer products (FMA) and multi-reductions lane-wise reductions, which
//! LLVM maps to the host's vector instructions (AVX2 + FMA here). Ops with dynamic shapes stay
//! as they are. Precondition: linalg on tensors, register-tiled.

use crate::diag::Diagnostic;
use crate::mlir::schedule::apply_schedule;
use crate::mlir::stages::tile::VECTORIZE;
use crate::mlir::stages::{expect_mlir, Program, Stage, StageEnv, StageOptions};
use crate::mlir::walk::walk;

/// Vectorization as a stage.
pub struct Vectorize;

/// Convolutions and pools (register-tiled to one output and window row) first become their
/// 1-d forms; then every register tile (`tessera.vectorize`) that can be vectorized is, one
/// at a time (an op that
/// cannot is left as it is: its failure is suppressed); then vector ops are lowered to
/// FMA-friendly forms.
const SCHEDULE: &str = r#"module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %windowed = transform.structured.match ops{["linalg.conv_2d_nhwc_hwcf", "linalg.pooling_nhwc_max", "linalg.pooling_nhwc_sum"]} attributes {tessera.vectorize} in %root : (!transform.any_op) -> !transform.any_op
    transform.foreach %windowed : !transform.any_op {
    ^bb0(%op: !transform.any_op):
      transform.sequence %op : !transform.any_op failures(suppress) {
      ^bb1(%o: !transform.any_op):
        %one_d = transform.structured.decompose %o : (!transform.any_op) -> !transform.any_op
        transform.structured.vectorize %one_d : !transform.any_op
      }
    }
    %ops = transform.structured.match interface{LinalgOp} attributes {tessera.vectorize} in %root : (!transform.any_op) -> !transform.any_op
    transform.foreach %ops : !transform.any_op {
    ^bb0(%op: !transform.any_op):
      transform.sequence %op : !transform.any_op failures(suppress) {
      ^bb1(%o: !transform.any_op):
        transform.structured.vectorize %o : !transform.any_op
      }
    }
    %funcs = transform.structured.match ops{["func.func"]} in %root : (!transform.any_op) -> !transform.any_op
    transform.apply_patterns to %funcs {
      transform.apply_patterns.vector.lower_contraction lowering_strategy = "outerproduct"
      transform.apply_patterns.vector.lower_multi_reduction lowering_strategy = "innerreduction"
      transform.apply_patterns.vector.lower_outerproduct
      transform.apply_patterns.vector.transfer_permutation_patterns
      transform.apply_patterns.vector.lower_transpose
      transform.apply_patterns.vector.lower_shape_cast
      transform.apply_patterns.tensor.fold_tensor_subset_ops_into_vector_transfers
      transform.apply_patterns.canonicalization
    } : !transform.any_op
    transform.yield
  }
}
"#;

impl Stage for Vectorize {
    fn name(&self) -> &'static str {
        "tessera-vectorize"
    }

    fn summary(&self) -> &'static str {
        "Vectorize linalg ops with static shapes. Input: linalg on tensors, tiled."
    }

    fn run<'c>(
        &self,
        program: Program<'c>,
        env: &StageEnv<'c, '_>,
        _: &StageOptions,
    ) -> Result<Program<'c>, Vec<Diagnostic>> {
        let mut module = expect_mlir(program, self.name())?;
        apply_schedule(
            env,
            &mut module,
            SCHEDULE,
            "of tessera-vectorize",
            self.name(),
        )?;
        walk(&module, |op| op.remove_attribute(VECTORIZE));
        Ok(Program::Mlir(module))
    }
}
