//! `array.matmul`: matrix product with numpy semantics for rank >= 2.

use tessera::dialect::Attrs;
use tessera::dialect::{Arity, OpDef, OpSchema, OperandSpec};
use tessera::infer::{broadcast_shapes, shape_text, InferContext};
use tessera::mlir::bridge::lowering::ConvertToMlir;
use tessera::types::{ElementClass, TensorType};

/// `array.matmul`.
pub struct Matmul;

/// Matrix product.
pub static MATMUL: Matmul = Matmul;

static SCHEMA: OpSchema = OpSchema {
    dialect: "array",
    name: "matmul",
    summary: "Matrix product with numpy semantics for rank >= 2 (leading batch dimensions broadcast).",
    description: "`a: [..., M, K]`, `b: [..., K, N]` give `y: [..., M, N]` with `y[..., i, j] = sum_k a[..., i, k] * b[..., k, j]`. The batch dimensions (all but the last two) broadcast as in numpy. Both operands have the same float or integer element type; integers wrap on overflow.",
    operands: &[
        OperandSpec { name: "a", arity: Arity::One, doc: "`[..., M, K]`" },
        OperandSpec { name: "b", arity: Arity::One, doc: "`[..., K, N]`" },
    ],
    literal: None,
    attrs: &[],
    results: 1,
    result_type_required: false,
};

impl OpDef for Matmul {
    /// Each element is a dot product over the inner dimension.
    fn accumulated_terms(
        &self,
        operands: &[&TensorType],
        _: &[&TensorType],
        _: &Attrs,
    ) -> Option<u64> {
        operands[0].shape.last().copied()
    }

    /// A multiply-add per result element and step of the inner dimension.
    fn flops(&self, operands: &[&TensorType], results: &[&TensorType], _: &Attrs) -> u64 {
        let inner = operands[0].shape.last().copied().unwrap_or(0);
        2 * results[0].num_elements().unwrap_or(0) * inner
    }

    fn converter(&self) -> Option<&dyn ConvertToMlir> {
        Some(self)
    }

    fn schema(&self) -> &OpSchema {
        &SCHEMA
    }

    fn infer(&self, ctx: &mut InferContext<'_>) -> Option<Vec<TensorType>> {
        ctx.require_min_rank(0, 2)?;
        ctx.require_min_rank(1, 2)?;
        let element = ctx.same_element(&[0, 1])?;
        ctx.require_class(0, &[ElementClass::Float, ElementClass::Int])?;
        let (a, b) = (ctx.operand(0), ctx.operand(1));
        let (ra, rb) = (a.rank(), b.rank());
        ctx.require_dim_match((0, ra - 1), (1, rb - 2), "inner dimensions differ")?;
        let (batch_a, batch_b) = (&a.shape[..ra - 2], &b.shape[..rb - 2]);
        let Some(mut shape) = broadcast_shapes(batch_a, batch_b) else {
            ctx.operand_error(
                1,
                format!(
                    "batch dimensions of operand 'b' ({}) do not broadcast with those of operand 'a' ({})",
                    shape_text(batch_b),
                    shape_text(batch_a)
                ),
            )?;
            return None;
        };
        shape.extend([a.shape[ra - 2], b.shape[rb - 1]]);
        Some(vec![TensorType::new(shape, element)])
    }
}
