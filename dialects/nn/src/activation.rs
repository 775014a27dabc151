//! Activations: relu, gelu, sigmoid, silu (elementwise) and softmax, log_softmax (along an axis).

use crate::X;
use tessera::dialect::{
    AttrDefault, AttrKind, AttrSpec, DefaultValue, OpDef, OpSchema, TransposeRule,
};
use tessera::infer::InferContext;
use tessera::transforms::decompose::Decompose;
use tessera::types::{ElementClass, TensorType};

/// The ops of the `Activation` family, so that evaluation and conversion match on a type, not
/// on names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ActivationKind {
    /// `relu`.
    Relu,
    /// `gelu`.
    Gelu,
    /// `sigmoid`.
    Sigmoid,
    /// `silu`.
    Silu,
    /// `softmax`.
    Softmax,
    /// `log_softmax`.
    LogSoftmax,
}

/// An activation: float operand, result of the same type; `axis`, when the op has it, must be
/// in range.
pub struct Activation {
    /// Which op of the family this is.
    pub kind: ActivationKind,
    schema: OpSchema,
}

const fn activation(
    kind: ActivationKind,
    name: &'static str,
    summary: &'static str,
    description: &'static str,
    attrs: &'static [AttrSpec],
) -> Activation {
    Activation {
        kind,
        schema: OpSchema {
            dialect: "nn",
            name,
            summary,
            description,
            operands: X,
            literal: None,
            attrs,
            results: 1,
            result_type_required: false,
        },
    }
}

impl OpDef for Activation {
    fn transpose_rule(&self) -> TransposeRule {
        match self.kind {
            ActivationKind::Softmax | ActivationKind::LogSoftmax => TransposeRule::Axes {
                per_dim: &[],
                axes: &["axis"],
            },
            ActivationKind::Relu
            | ActivationKind::Gelu
            | ActivationKind::Sigmoid
            | ActivationKind::Silu => TransposeRule::Elementwise,
        }
    }

    fn decomposition(&self) -> Option<&dyn Decompose> {
        Some(self)
    }

    fn schema(&self) -> &OpSchema {
        &self.schema
    }

    fn infer(&self, ctx: &mut InferContext<'_>) -> Option<Vec<TensorType>> {
        ctx.require_class(0, &[ElementClass::Float])?;
        let x = ctx.operand(0);
        if self.schema.attr("axis").is_some() {
            ctx.axis("axis", x.rank())?;
        }
        Some(vec![x.clone()])
    }
}

const AXIS: &[AttrSpec] = &[AttrSpec {
    name: "axis",
    kind: AttrKind::Int,
    default: AttrDefault::Value(DefaultValue::Int(-1)),
    doc: "the normalized axis; negative counts from the end",
}];

/// Rectified linear unit.
pub static RELU: Activation = activation(
    ActivationKind::Relu,
    "relu",
    "Rectified linear unit: `max(x, 0)`, elementwise.",
    "`y = max(x, 0)`; NaN propagates.",
    &[],
);
/// Gaussian error linear unit.
pub static GELU: Activation = activation(
    ActivationKind::Gelu,
    "gelu",
    "Gaussian error linear unit, exact or with the tanh approximation.",
    "`approximate = \"none\"`: `y = 0.5 x (1 + erf(x / sqrt(2)))`. `approximate = \"tanh\"`: `y = 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))` (as PyTorch's `gelu(approximate='tanh')` and Keras' `gelu(approximate=True)`).",
    &[AttrSpec {
        name: "approximate",
        kind: AttrKind::Enum(&["none", "tanh"]),
        default: AttrDefault::Value(DefaultValue::Str("none")),
        doc: "`\"none\"` (erf) or `\"tanh\"`",
    }],
);
/// Logistic sigmoid.
pub static SIGMOID: Activation = activation(
    ActivationKind::Sigmoid,
    "sigmoid",
    "Logistic sigmoid, elementwise.",
    "`y = 1 / (1 + e^(-x))`, in `[0, 1]`; for very negative `x`, `e^(-x)` overflows to `inf` and `y` is its limit, 0 (never NaN).",
    &[],
);
/// Sigmoid-weighted linear unit.
pub static SILU: Activation = activation(
    ActivationKind::Silu,
    "silu",
    "Sigmoid linear unit (swish), elementwise.",
    "`y = x * sigmoid(x)`.",
    &[],
);
/// Softmax along an axis.
pub static SOFTMAX: Activation = activation(ActivationKind::Softmax, "softmax", "Softmax along `axis`.", "`y = e^(x - m) / sum_axis e^(x - m)` with `m = max_axis x` (subtracting the maximum keeps it stable: no overflow for large inputs).", AXIS);
/// Log-softmax along an axis.
pub static LOG_SOFTMAX: Activation = activation(
    ActivationKind::LogSoftmax,
    "log_softmax",
    "Logarithm of softmax along `axis`, computed stably.",
    "`y = x - m - ln(sum_axis e^(x - m))` with `m = max_axis x`.",
    AXIS,
);
