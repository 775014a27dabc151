//! Normalization layers: layer_norm (over trailing axes) and batch_norm (inference form).

use tessera::attr::Attribute;
use tessera::dialect::{
    Arity, AttrDefault, AttrKind, AttrSpec, DefaultValue, OpDef, OpSchema, OperandSpec,
};
use tessera::infer::{shape_text, InferContext};
use tessera::transforms::decompose::Decompose;
use tessera::types::{ElementClass, TensorType};

/// Requires `epsilon` to be finite and non-negative.
fn check_epsilon(ctx: &mut InferContext<'_>) -> Option<()> {
    let epsilon = ctx.float("epsilon").unwrap_or(0.0);
    if epsilon.is_finite() && epsilon >= 0.0 {
        return Some(());
    }
    ctx.attr_error(
        "epsilon",
        format!(
            "attribute 'epsilon' ({}) must be finite and non-negative",
            Attribute::Float(epsilon)
        ),
    )
}

/// Requires operand `index` to have exactly `shape`.
fn require_shape(
    ctx: &mut InferContext<'_>,
    index: usize,
    shape: &[u64],
    what: &str,
) -> Option<()> {
    let actual = &ctx.operand(index).shape;
    if actual == shape {
        return Some(());
    }
    let name = ctx.label(index);
    let message = format!(
        "{name} shape ({}) must be ({}), {what}",
        shape_text(actual),
        shape_text(shape)
    );
    ctx.operand_error(index, message)
}

/// `nn.layer_norm`.
pub struct LayerNorm;

/// Layer normalization.
pub static LAYER_NORM: LayerNorm = LayerNorm;

static LAYER_NORM_SCHEMA: OpSchema = OpSchema {
    dialect: "nn",
    name: "layer_norm",
    summary: "Layer normalization over the axes from `axis` to the last.",
    description: "With `A` the axes `axis..rank-1`: `m = mean_A x`, `v = mean_A (x - m)^2` (biased), `y = (x - m) / sqrt(v + epsilon) * gamma + beta`; `gamma` and `beta` have the shape `x.shape[axis..]`. Centering before squaring keeps the variance accurate.",
    operands: &[
        OperandSpec { name: "x", arity: Arity::One, doc: "float, rank >= 1" },
        OperandSpec { name: "gamma", arity: Arity::One, doc: "`x.shape[axis..]`, the scale" },
        OperandSpec { name: "beta", arity: Arity::One, doc: "`x.shape[axis..]`, the offset" },
    ],
    literal: None,
    attrs: &[
        AttrSpec { name: "axis", kind: AttrKind::Int, default: AttrDefault::Value(DefaultValue::Int(-1)), doc: "the first normalized axis; negative counts from the end" },
        AttrSpec { name: "epsilon", kind: AttrKind::Float, default: AttrDefault::Value(DefaultValue::Float(1.0e-5)), doc: "added to the variance; finite, >= 0" },
    ],
    results: 1,
    result_type_required: false,
};

impl OpDef for LayerNorm {
    fn decomposition(&self) -> Option<&dyn Decompose> {
        Some(self)
    }

    fn schema(&self) -> &OpSchema {
        &LAYER_NORM_SCHEMA
    }

    fn infer(&self, ctx: &mut InferContext<'_>) -> Option<Vec<TensorType>> {
        ctx.require_class(0, &[ElementClass::Float])?;
        ctx.same_element(&[0, 1, 2])?;
        let x = ctx.operand(0);
        let axis = ctx.axis("axis", x.rank())?;
        check_epsilon(ctx)?;
        let normalized = &x.shape[axis..];
        let what = format!("the normalized dimensions of 'x' (from axis {axis})");
        require_shape(ctx, 1, normalized, &what)?;
        require_shape(ctx, 2, normalized, &what)?;
        Some(vec![x.clone()])
    }
}

/// `nn.batch_norm`.
pub struct BatchNorm;

/// Batch normalization, inference form.
pub static BATCH_NORM: BatchNorm = BatchNorm;

static BATCH_NORM_SCHEMA: OpSchema = OpSchema {
    dialect: "nn",
    name: "batch_norm",
    summary: "Batch normalization with given statistics (inference), channels last.",
    description: "`y = (x - mean) / sqrt(variance + epsilon) * scale + offset`, each parameter a vector over the last axis of `x` (the channels), broadcast over the others (as Keras `BatchNormalization` at inference).",
    operands: &[
        OperandSpec { name: "x", arity: Arity::One, doc: "`[..., C]`, float" },
        OperandSpec { name: "scale", arity: Arity::One, doc: "`[C]`" },
        OperandSpec { name: "offset", arity: Arity::One, doc: "`[C]`" },
        OperandSpec { name: "mean", arity: Arity::One, doc: "`[C]`" },
        OperandSpec { name: "variance", arity: Arity::One, doc: "`[C]`" },
    ],
    literal: None,
    attrs: &[AttrSpec { name: "epsilon", kind: AttrKind::Float, default: AttrDefault::Value(DefaultValue::Float(1.0e-3)), doc: "added to the variance; finite, >= 0" }],
    results: 1,
    result_type_required: false,
};

impl OpDef for BatchNorm {
    fn decomposition(&self) -> Option<&dyn Decompose> {
        Some(self)
    }

    fn schema(&self) -> &OpSchema {
        &BATCH_NORM_SCHEMA
    }

    fn infer(&self, ctx: &mut InferContext<'_>) -> Option<Vec<TensorType>> {
        ctx.require_class(0, &[ElementClass::Float])?;
        ctx.same_element(&[0, 1, 2, 3, 4])?;
        ctx.require_min_rank(0, 1)?;
        check_epsilon(ctx)?;
        let x = ctx.operand(0);
        let channels = [x.shape[x.rank() - 1]];
        for i in 1..5 {
            require_shape(ctx, i, &channels, "the channels (last dimension) of 'x'")?;
        }
        Some(vec![x.clone()])
    }
}
