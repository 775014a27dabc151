//! `tessera-vectorize`: linalg ops with static shapes (the tiles `tessera-tile` leaves) become
//! vector operations, with the transform dialect's `structured.vectorize`;
//! contractions become outer products (FMA) and multi-reductions lane-wise reductions, which
//! LLVM maps to the host's vector instructions (AVX2 + FMA here). Ops with dynamic shapes stay
//! as they are. Precondition: linalg on tensors, register-tiled.

use crate::diag::Diagnostic;
use crate::mlir::bridge::walk::walk;
use crate::mlir::cpu::stages::tile::VECTORIZE;
use crate::mlir::pipeline::schedule::{apply_schedule, Author};
use crate::mlir::pipeline::stages::{
    expect_mlir, run_upstream, stage_error, Program, Stage, StageEnv, StageOptions,
};
use melior::ir::Attribute;

/// Vectorization as a stage.
pub struct Vectorize;

/// Convolutions and pools (register-tiled to one output and window row) first become their
/// 1-d forms; then every register tile (`tessera.vectorize`) that can be vectorized is, one
/// at a time (an op that cannot is left as it is: its failure is suppressed); contractions
/// are recognized in the reductions, and each loop's repeated computations merged (CSE).
const VECTORIZE_SCHEDULE: &str = r#"module attributes {transform.with_named_sequence} {
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
      transform.apply_patterns.vector.reduction_to_contract
      transform.apply_patterns.vector.transfer_permutation_patterns
      transform.apply_patterns.canonicalization
    } : !transform.any_op
    %loops = transform.structured.match ops{["scf.for"]} in %root : (!transform.any_op) -> !transform.any_op
    transform.apply_cse to %loops : !transform.any_op
    transform.yield
  }
}
"#;

/// Between the two schedules: the accumulators that loops read and write back at invariant
/// places (a reduction's) are carried by the loops instead (what
/// `transform.loop.hoist_loop_invariant_subsets` does to each `scf.for`; this pass decides the
/// same in a fraction of the time, src/mlir/cpu/cxx/subset_hoisting.cpp). A pass and not
/// `transform.apply_registered_pass`, whose pass manager verifies the payload after it (40 M
/// instructions on the GPT block, half of what the pass saves).
const HOIST: &str = "tessera-hoist-loop-invariant-subsets";

/// Then vector ops are lowered to FMA-friendly forms, and 2-d transposes (16 x 16 blocks) to
/// shuffles (`shuffle_16x16`; the default lowering moved one element at a time).
const LOWERING_SCHEDULE: &str = r#"module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %funcs = transform.structured.match ops{["func.func"]} in %root : (!transform.any_op) -> !transform.any_op
    transform.apply_patterns to %funcs {
      transform.apply_patterns.vector.lower_contraction lowering_strategy = "outerproduct"
      transform.apply_patterns.vector.lower_multi_reduction lowering_strategy = "innerreduction"
      transform.apply_patterns.vector.lower_outerproduct
      transform.apply_patterns.vector.transfer_permutation_patterns
      transform.apply_patterns.vector.lower_transpose lowering_strategy = "shuffle_16x16"
      transform.apply_patterns.vector.lower_shape_cast
      transform.apply_patterns.tensor.fold_tensor_subset_ops_into_vector_transfers
      transform.apply_patterns.vector.cast_away_vector_leading_one_dim
      transform.apply_patterns.canonicalization
    } : !transform.any_op
    transform.yield
  }
}
"#;

/// Last, what each loop computes the same at every step moves out of it: on tensors a read
/// is pure, so a row's value that a loop over the row's vectors reads and transforms
/// (softmax's reciprocal of the row's sum) is read and computed once; after bufferization
/// LLVM could not hoist it past the loop's stores (a scalar division per vector). Upstream's
/// `loop-invariant-code-motion` also hoisted `tensor.empty` out of parallel row loops: one
/// buffer for every iteration, shared by the threads (src/mlir/cpu/cxx/invariant_code_hoisting.cpp).
const LICM: &str = "tessera-hoist-invariant-code";

/// The most elements a fill inside a loop may have to be vectorized with the register tiles:
/// a tile's accumulators, zeroed before a matmul tile accumulates (16 x 64 on AVX-512), are a
/// fill the tiling strategy does not mark. Left scalar, LLVM unrolled each into 64 scalar
/// stores per row that its code generator merged back into vectors, a tenth of W2's code.
/// Fills of whole tensors (outside loops) stay loops.
const MAX_TILE_FILL_ELEMENTS: i64 = 4096;

/// The floating-point ops LLVM may contract into fused multiply-adds once they carry the
/// `contract` fast-math flag: a multiply feeding an add or subtract (in vector code and in
/// scalar loops alike) becomes one FMA instruction, rounded once.
const CONTRACTIBLE: [&str; 4] = ["arith.mulf", "arith.addf", "arith.subf", "arith.negf"];

/// The name of arith's fast-math flags attribute.
const FASTMATH: &str = "fastmath";

/// `existing` fast-math flags (printed, or none) with `contract` added.
fn with_contract(existing: Option<&str>) -> String {
    let flags = existing
        .and_then(|text| text.strip_prefix("#arith.fastmath<"))
        .and_then(|text| text.strip_suffix('>'))
        .unwrap_or("none");
    match flags {
        "none" => "#arith.fastmath<contract>".to_string(),
        _ if flags
            .split(',')
            .any(|f| matches!(f.trim(), "contract" | "fast")) =>
        {
            format!("#arith.fastmath<{flags}>")
        }
        _ => format!("#arith.fastmath<{flags},contract>"),
    }
}

impl Stage for Vectorize {
    fn name(&self) -> &'static str {
        "tessera-vectorize"
    }

    fn summary(&self) -> &'static str {
        "Vectorize register tiles; contractions become FMAs. Input: linalg on tensors, tiled."
    }

    fn run<'c>(
        &self,
        program: Program<'c>,
        env: &StageEnv<'c, '_>,
        _: &StageOptions,
    ) -> Result<Program<'c>, Vec<Diagnostic>> {
        let mut module = expect_mlir(program, self.name())?;
        mark_tile_fills(&module, Attribute::unit(env.context.context()));
        apply_schedule(
            env,
            &mut module,
            VECTORIZE_SCHEDULE,
            "of tessera-vectorize",
            self.name(),
            Author::Stage,
        )?;
        run_upstream(env, &mut module, HOIST, self.name())?;
        apply_schedule(
            env,
            &mut module,
            LOWERING_SCHEDULE,
            "of tessera-vectorize's lowering",
            self.name(),
            Author::Stage,
        )?;
        run_upstream(env, &mut module, LICM, self.name())?;
        let ctx = env.context.context();
        let mut invalid = None;
        walk(&module, |op| {
            op.remove_attribute(VECTORIZE);
            if CONTRACTIBLE.contains(&op.name().as_str()) {
                let existing = op.attribute(FASTMATH).map(|flags| flags.to_string());
                let flags = with_contract(existing.as_deref());
                match Attribute::parse(ctx, &flags) {
                    Some(flags) => op.set_attribute(FASTMATH, flags),
                    None => invalid = Some(flags),
                }
            }
        });
        if let Some(flags) = invalid {
            return Err(stage_error(
                self.name(),
                format!("cannot build the fast-math flags {flags}"),
            ));
        }
        Ok(Program::Mlir(module))
    }
}

/// Marks for vectorization the fills inside loops of at most [`MAX_TILE_FILL_ELEMENTS`]
/// elements of a static shape (not of `i1`, as register tiles).
fn mark_tile_fills(module: &melior::ir::Module<'_>, unit: Attribute<'_>) {
    walk(module, |op| {
        if op.name() != "linalg.fill" || op.touches_i1() {
            return;
        }
        if op
            .parent()
            .is_none_or(|parent| parent.name() == "func.func")
        {
            return;
        }
        let (_, results) = op.shapes();
        let Some(Some(shape)) = results.first() else {
            return;
        };
        let elements = shape
            .iter()
            .try_fold(1i64, |n, &d| (d > 0).then(|| n.saturating_mul(d)));
        if elements.is_some_and(|n| n <= MAX_TILE_FILL_ELEMENTS) {
            op.set_attribute(VECTORIZE, unit);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::with_contract;

    #[test]
    fn contract_joins_existing_flags() {
        assert_eq!(with_contract(None), "#arith.fastmath<contract>");
        assert_eq!(
            with_contract(Some("#arith.fastmath<none>")),
            "#arith.fastmath<contract>"
        );
        assert_eq!(
            with_contract(Some("#arith.fastmath<nnan,ninf>")),
            "#arith.fastmath<nnan,ninf,contract>"
        );
        assert_eq!(
            with_contract(Some("#arith.fastmath<fast>")),
            "#arith.fastmath<fast>"
        );
    }
}
