//! Reductions over axes (`reduce_sum`, `reduce_max`, `reduce_min`, `reduce_mean`) and `argmax`.

use tessera::dialect::Attrs;
use tessera::dialect::{
    Arity, AttrDefault, AttrKind, AttrSpec, DefaultValue, OpDef, OpSchema, OperandSpec,
    TransposeRule,
};
use tessera::infer::InferContext;
use tessera::mlir::bridge::lowering::ConvertToMlir;
use tessera::types::{ElementClass, ElementType, TensorType};

const X: &[OperandSpec] = &[OperandSpec {
    name: "x",
    arity: Arity::One,
    doc: "any shape; float or integer",
}];

const X_FLOAT: &[OperandSpec] = &[OperandSpec {
    name: "x",
    arity: Arity::One,
    doc: "any shape; float",
}];

const AXES_KEEPDIMS: &[AttrSpec] = &[
    AttrSpec {
        name: "axes",
        kind: AttrKind::IntList,
        default: AttrDefault::Required,
        doc: "the reduced axes, distinct; negative counts from the end",
    },
    AttrSpec {
        name: "keepdims",
        kind: AttrKind::Bool,
        default: AttrDefault::Value(DefaultValue::Bool(false)),
        doc: "keep reduced axes as dimensions of size 1",
    },
];

/// The ops of the `Reduce` family, so that evaluation and conversion match on a type, not
/// on names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReduceKind {
    /// `reduce_sum`.
    Sum,
    /// `reduce_max`.
    Max,
    /// `reduce_min`.
    Min,
    /// `reduce_mean`.
    Mean,
    /// `reduce_prod`.
    Prod,
}

/// A reduction over `axes`.
pub struct Reduce {
    /// Which op of the family this is.
    pub kind: ReduceKind,
    schema: OpSchema,
    classes: &'static [ElementClass],
}

const fn reduce(
    kind: ReduceKind,
    name: &'static str,
    summary: &'static str,
    description: &'static str,
    classes: &'static [ElementClass],
) -> Reduce {
    Reduce {
        kind,
        schema: OpSchema {
            dialect: "array",
            name,
            summary,
            description,
            operands: if classes.len() == 1 { X_FLOAT } else { X },
            literal: None,
            attrs: AXES_KEEPDIMS,
            results: 1,
            result_type_required: false,
        },
        classes,
    }
}

impl OpDef for Reduce {
    fn transpose_rule(&self) -> TransposeRule {
        TransposeRule::Axes {
            per_dim: &[],
            axes: &["axes"],
        }
    }

    /// Sums and means add the elements each result element stands for, products multiply
    /// them; maxima and minima round nothing.
    fn accumulated_terms(
        &self,
        operands: &[&TensorType],
        results: &[&TensorType],
        _: &Attrs,
    ) -> Option<u64> {
        if !matches!(
            self.kind,
            ReduceKind::Sum | ReduceKind::Mean | ReduceKind::Prod
        ) {
            return None;
        }
        let terms = operands[0].num_elements()?;
        Some(terms / results[0].num_elements()?.max(1))
    }

    fn flops(&self, operands: &[&TensorType], _: &[&TensorType], _: &Attrs) -> u64 {
        operands[0].num_elements().unwrap_or(0)
    }

    fn converter(&self) -> Option<&dyn ConvertToMlir> {
        Some(self)
    }

    fn schema(&self) -> &OpSchema {
        &self.schema
    }

    fn infer(&self, ctx: &mut InferContext<'_>) -> Option<Vec<TensorType>> {
        ctx.require_class(0, self.classes)?;
        let x = ctx.operand(0);
        let axes = ctx.axes("axes", x.rank())?;
        let keepdims = ctx
            .attr("keepdims")
            .and_then(|a| a.as_bool())
            .unwrap_or(false);
        let shape = reduced_shape(&x.shape, &axes, keepdims);
        Some(vec![TensorType::new(shape, x.element)])
    }
}

/// `shape` without `axes` (or with them set to 1 when `keepdims`).
fn reduced_shape(shape: &[u64], axes: &[usize], keepdims: bool) -> Vec<u64> {
    shape
        .iter()
        .enumerate()
        .filter_map(|(i, &d)| match (axes.contains(&i), keepdims) {
            (false, _) => Some(d),
            (true, true) => Some(1),
            (true, false) => None,
        })
        .collect()
}

const NUMERIC: &[ElementClass] = &[ElementClass::Float, ElementClass::Int];

/// Sum over axes.
pub static REDUCE_SUM: Reduce = reduce(
    ReduceKind::Sum,
    "reduce_sum",
    "Sum over `axes`.",
    "`y = sum of x over axes`; the sum of no elements is 0. Integers wrap on overflow.",
    NUMERIC,
);
/// Maximum over axes.
pub static REDUCE_MAX: Reduce = reduce(ReduceKind::Max, "reduce_max", "Maximum over `axes`.", "`y = max of x over axes`; NaN propagates; the maximum of no elements is the lowest value of the type (`-inf` for floats).", NUMERIC);
/// Minimum over axes.
pub static REDUCE_MIN: Reduce = reduce(ReduceKind::Min, "reduce_min", "Minimum over `axes`.", "`y = min of x over axes`; NaN propagates; the minimum of no elements is the highest value of the type (`inf` for floats).", NUMERIC);
/// Product over axes.
pub static REDUCE_PROD: Reduce = reduce(
    ReduceKind::Prod,
    "reduce_prod",
    "Product over `axes`.",
    "`y = product of x over axes`; the product of no elements is 1. Integers wrap on overflow.",
    NUMERIC,
);
/// Mean over axes.
pub static REDUCE_MEAN: Reduce = reduce(
    ReduceKind::Mean,
    "reduce_mean",
    "Arithmetic mean over `axes` (floats).",
    "`y = (sum of x over axes) / (number of reduced elements)`; the mean of no elements is NaN.",
    &[ElementClass::Float],
);

/// `array.argmax`.
pub struct Argmax;

/// Index of the maximum along an axis.
pub static ARGMAX: Argmax = Argmax;

static ARGMAX_SCHEMA: OpSchema = OpSchema {
    dialect: "array",
    name: "argmax",
    summary: "Index of the maximum along `axis`, as `i64`.",
    description: "`y[...] = argmax_i x[..., i, ...]` along `axis`, which is removed from the shape. Ties give the first index; a NaN counts as the maximum (the first NaN wins), as in numpy. The axis must not be empty.",
    operands: X,
    literal: None,
    attrs: &[AttrSpec {
        name: "axis",
        kind: AttrKind::Int,
        default: AttrDefault::Required,
        doc: "the axis searched; negative counts from the end",
    }],
    results: 1,
    result_type_required: false,
};

impl OpDef for Argmax {
    fn transpose_rule(&self) -> TransposeRule {
        TransposeRule::Axes {
            per_dim: &[],
            axes: &["axis"],
        }
    }

    fn flops(&self, operands: &[&TensorType], _: &[&TensorType], _: &Attrs) -> u64 {
        operands[0].num_elements().unwrap_or(0)
    }

    fn converter(&self) -> Option<&dyn ConvertToMlir> {
        Some(self)
    }

    fn schema(&self) -> &OpSchema {
        &ARGMAX_SCHEMA
    }

    fn infer(&self, ctx: &mut InferContext<'_>) -> Option<Vec<TensorType>> {
        ctx.require_class(0, NUMERIC)?;
        let x = ctx.operand(0);
        let axis = ctx.axis("axis", x.rank())?;
        if x.shape[axis] == 0 {
            ctx.attr_error("axis", format!("axis {axis} is empty (size 0): no maximum"))?;
        }
        Some(vec![TensorType::new(
            reduced_shape(&x.shape, &[axis], false),
            ElementType::I64,
        )])
    }
}
