//! `nn.attention`: scaled dot-product attention.

use tessera::attr::Attribute;
use tessera::dialect::{
    Arity, AttrDefault, AttrKind, AttrSpec, DefaultValue, OpDef, OpSchema, OperandSpec,
};
use tessera::infer::{shape_text, InferContext};
use tessera::transforms::decompose::Decompose;
use tessera::types::{ElementClass, TensorType};

/// `nn.attention`.
pub struct Attention;

/// Scaled dot-product attention.
pub static ATTENTION: Attention = Attention;

static SCHEMA: OpSchema = OpSchema {
    dialect: "nn",
    name: "attention",
    summary: "Scaled dot-product attention: `softmax(q · kᵀ · scale) · v`.",
    description: "`q: [..., Lq, D]`, `k: [..., Lk, D]`, `v: [..., Lk, Dv]` with equal leading (batch, head) dimensions give `y: [..., Lq, Dv]`: `s = q · kᵀ · scale`, `p = softmax(s)` along the last axis (stable, as `nn.softmax`), `y = p · v`. `scale` defaults to `1 / sqrt(D)`. `causal = true` masks key `j` for query `i` when `j > i` (top-left aligned, as PyTorch's `is_causal`).",
    operands: &[
        OperandSpec { name: "q", arity: Arity::One, doc: "`[..., Lq, D]`, float" },
        OperandSpec { name: "k", arity: Arity::One, doc: "`[..., Lk, D]`" },
        OperandSpec { name: "v", arity: Arity::One, doc: "`[..., Lk, Dv]`" },
    ],
    literal: None,
    attrs: &[
        AttrSpec { name: "scale", kind: AttrKind::Float, default: AttrDefault::Derived("1 / sqrt(D)"), doc: "multiplies the scores" },
        AttrSpec { name: "causal", kind: AttrKind::Bool, default: AttrDefault::Value(DefaultValue::Bool(false)), doc: "mask keys after the query's position" },
    ],
    results: 1,
    result_type_required: false,
};

impl OpDef for Attention {
    fn decomposition(&self) -> Option<&dyn Decompose> {
        Some(self)
    }

    fn schema(&self) -> &OpSchema {
        &SCHEMA
    }

    fn infer(&self, ctx: &mut InferContext<'_>) -> Option<Vec<TensorType>> {
        ctx.require_class(0, &[ElementClass::Float])?;
        ctx.same_element(&[0, 1, 2])?;
        for i in 0..3 {
            ctx.require_min_rank(i, 2)?;
        }
        let rank = ctx.operand(0).rank();
        for i in 1..3 {
            ctx.require_rank(i, rank, "the rank of 'q'")?;
        }
        let (q, k, v) = (ctx.operand(0), ctx.operand(1), ctx.operand(2));
        for (i, t) in [(1, k), (2, v)] {
            if t.shape[..rank - 2] != q.shape[..rank - 2] {
                let name = ctx.label(i);
                ctx.operand_error(
                    i,
                    format!(
                        "batch dimensions of {name} ({}) differ from those of operand 'q' ({})",
                        shape_text(&t.shape[..rank - 2]),
                        shape_text(&q.shape[..rank - 2])
                    ),
                )?;
            }
        }
        ctx.require_dim_match(
            (0, rank - 1),
            (1, rank - 1),
            "query and key feature sizes differ",
        )?;
        ctx.require_dim_match(
            (1, rank - 2),
            (2, rank - 2),
            "key and value sequence lengths differ",
        )?;
        if let Some(scale) = ctx.float("scale") {
            if !scale.is_finite() {
                ctx.attr_error(
                    "scale",
                    format!(
                        "attribute 'scale' ({}) must be finite",
                        Attribute::Float(scale)
                    ),
                )?;
            }
        }
        let mut shape = q.shape.clone();
        shape[rank - 1] = v.shape[rank - 1];
        Some(vec![TensorType::new(shape, q.element)])
    }
}
