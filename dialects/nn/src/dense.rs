//! `nn.dense`: a fully connected layer.

use tessera::dialect::{Arity, OpDef, OpSchema, OperandSpec};
use tessera::infer::InferContext;
use tessera::transforms::decompose::Decompose;
use tessera::types::{ElementClass, TensorType};

/// `nn.dense`.
pub struct Dense;

/// Fully connected layer.
pub static DENSE: Dense = Dense;

static SCHEMA: OpSchema = OpSchema {
    dialect: "nn",
    name: "dense",
    summary: "Fully connected layer: `x · w + b`.",
    description: "`x: [..., K]`, `w: [K, N]`, optional `b: [N]` give `y: [..., N]` with `y[..., n] = sum_k x[..., k] * w[k, n] + b[n]` (as Keras `Dense` without activation).",
    operands: &[
        OperandSpec { name: "x", arity: Arity::One, doc: "`[..., K]`, float" },
        OperandSpec { name: "w", arity: Arity::One, doc: "`[K, N]`" },
        OperandSpec { name: "b", arity: Arity::Optional, doc: "`[N]`" },
    ],
    literal: None,
    attrs: &[],
    results: 1,
    result_type_required: false,
};

impl OpDef for Dense {
    fn decomposition(&self) -> Option<&dyn Decompose> {
        Some(self)
    }

    fn schema(&self) -> &OpSchema {
        &SCHEMA
    }

    fn infer(&self, ctx: &mut InferContext<'_>) -> Option<Vec<TensorType>> {
        let all: Vec<usize> = (0..ctx.operand_count()).collect();
        ctx.require_class(0, &[ElementClass::Float])?;
        ctx.same_element(&all)?;
        ctx.require_min_rank(0, 1)?;
        ctx.require_rank(1, 2, "a [K, N] weight matrix")?;
        let rank = ctx.operand(0).rank();
        ctx.require_dim_match((0, rank - 1), (1, 0), "inner dimensions differ")?;
        if ctx.optional_operand(2).is_some() {
            ctx.require_rank(2, 1, "a [N] bias vector")?;
            ctx.require_dim_match((1, 1), (2, 0), "bias size differs from the output features")?;
        }
        let mut shape = ctx.operand(0).shape.clone();
        shape[rank - 1] = ctx.operand(1).shape[1];
        Some(vec![TensorType::new(shape, ctx.operand(0).element)])
    }
}
