//! Layout ops: transpose, reshape, broadcast, concat, slice, gather, pad.

use tessera::attr::Attribute;
use tessera::dialect::{
    Arity, AttrDefault, AttrKind, AttrSpec, DefaultValue, OpDef, OpSchema, OperandSpec,
    TransposeRule,
};
use tessera::infer::{shape_text, InferContext};
use tessera::mlir::bridge::lowering::ConvertToMlir;
use tessera::number::round_to;
use tessera::types::{ElementClass, ElementType, TensorType};

const X: &[OperandSpec] = &[OperandSpec {
    name: "x",
    arity: Arity::One,
    doc: "any shape",
}];

/// `array.transpose`.
pub struct Transpose;

/// Permutes dimensions.
pub static TRANSPOSE: Transpose = Transpose;

static TRANSPOSE_SCHEMA: OpSchema = OpSchema {
    dialect: "array",
    name: "transpose",
    summary: "Permutes the dimensions: result dimension `i` is operand dimension `perm[i]`.",
    description: "`y[i_0, ..., i_{n-1}]` is `x` at index `j` with `j[perm[k]] = i_k`; `y.shape[k] = x.shape[perm[k]]`. `perm` is a permutation of `0..rank-1`.",
    operands: X,
    literal: None,
    attrs: &[AttrSpec {
        name: "perm",
        kind: AttrKind::IntList,
        default: AttrDefault::Required,
        doc: "a permutation of `0..rank-1`",
    }],
    results: 1,
    result_type_required: false,
};

impl OpDef for Transpose {
    /// It only moves or converts elements.
    fn moves_storage_types(&self) -> bool {
        true
    }

    fn converter(&self) -> Option<&dyn ConvertToMlir> {
        Some(self)
    }

    fn schema(&self) -> &OpSchema {
        &TRANSPOSE_SCHEMA
    }

    fn infer(&self, ctx: &mut InferContext<'_>) -> Option<Vec<TensorType>> {
        let x = ctx.operand(0);
        let perm = ctx.int_list("perm").unwrap_or_default();
        let mut sorted = perm.clone();
        sorted.sort_unstable();
        if !sorted.iter().copied().eq(0..x.rank() as i64) {
            let list = Attribute::List(perm.iter().map(|&p| Attribute::Int(p)).collect());
            ctx.attr_error(
                "perm",
                format!(
                    "attribute 'perm' ({list}) is not a permutation of 0..{} (rank {})",
                    x.rank().max(1) - 1,
                    x.rank()
                ),
            )?;
        }
        let shape = perm.iter().map(|&p| x.shape[p as usize]).collect();
        Some(vec![TensorType::new(shape, x.element)])
    }
}

/// `array.reshape`.
pub struct Reshape;

/// Reinterprets the elements under another shape.
pub static RESHAPE: Reshape = Reshape;

static RESHAPE_SCHEMA: OpSchema = OpSchema {
    dialect: "array",
    name: "reshape",
    summary: "The same elements in row-major order under the written result shape.",
    description: "`y` has the written result type; its elements in row-major order are those of `x`. The element counts and element types agree.",
    operands: X,
    literal: None,
    attrs: &[],
    results: 1,
    result_type_required: true,
};

impl OpDef for Reshape {
    /// It only moves or converts elements.
    fn moves_storage_types(&self) -> bool {
        true
    }

    fn converter(&self) -> Option<&dyn ConvertToMlir> {
        Some(self)
    }

    fn schema(&self) -> &OpSchema {
        &RESHAPE_SCHEMA
    }

    fn infer(&self, ctx: &mut InferContext<'_>) -> Option<Vec<TensorType>> {
        let (x, target) = (ctx.operand(0), ctx.written_result(0)?);
        if x.num_elements() != target.num_elements() {
            ctx.error(format!(
                "cannot reshape {x} ({} elements) into {target} ({} elements)",
                x.num_elements().unwrap_or(0),
                target.num_elements().unwrap_or(0)
            ))?;
        }
        Some(vec![target.with_element(x.element)])
    }
}

/// `array.broadcast`.
pub struct Broadcast;

/// Expands to a larger shape.
pub static BROADCAST: Broadcast = Broadcast;

static BROADCAST_SCHEMA: OpSchema = OpSchema {
    dialect: "array",
    name: "broadcast",
    summary: "Expands `x` to the written result shape by numpy broadcasting.",
    description: "`x`'s shape, aligned on the right with the result's, has each dimension equal to the result's or 1; missing leading dimensions and size-1 dimensions repeat. The element type is unchanged.",
    operands: X,
    literal: None,
    attrs: &[],
    results: 1,
    result_type_required: true,
};

impl OpDef for Broadcast {
    /// It only moves or converts elements.
    fn moves_storage_types(&self) -> bool {
        true
    }

    fn converter(&self) -> Option<&dyn ConvertToMlir> {
        Some(self)
    }

    fn schema(&self) -> &OpSchema {
        &BROADCAST_SCHEMA
    }

    fn infer(&self, ctx: &mut InferContext<'_>) -> Option<Vec<TensorType>> {
        let (x, target) = (ctx.operand(0), ctx.written_result(0)?);
        let offset = target.rank().checked_sub(x.rank());
        let fits = offset.is_some_and(|offset| {
            x.shape
                .iter()
                .zip(&target.shape[offset..])
                .all(|(&d, &t)| d == t || d == 1)
        });
        if !fits {
            ctx.error(format!(
                "cannot broadcast shape ({}) to ({})",
                shape_text(&x.shape),
                shape_text(&target.shape)
            ))?;
        }
        Some(vec![target.with_element(x.element)])
    }
}

/// `array.concat`.
pub struct Concat;

/// Joins tensors along an axis.
pub static CONCAT: Concat = Concat;

static CONCAT_SCHEMA: OpSchema = OpSchema {
    dialect: "array",
    name: "concat",
    summary: "Joins one or more tensors along `axis`.",
    description: "All operands have the same rank and element type, and the same dimensions except along `axis`, where the result's dimension is the sum.",
    operands: &[OperandSpec {
        name: "inputs",
        arity: Arity::Variadic,
        doc: "one or more tensors",
    }],
    literal: None,
    attrs: &[AttrSpec {
        name: "axis",
        kind: AttrKind::Int,
        default: AttrDefault::Required,
        doc: "the joined axis; negative counts from the end",
    }],
    results: 1,
    result_type_required: false,
};

impl OpDef for Concat {
    /// It only moves or converts elements.
    fn moves_storage_types(&self) -> bool {
        true
    }

    fn transpose_rule(&self) -> TransposeRule {
        TransposeRule::Axes {
            per_dim: &[],
            axes: &["axis"],
        }
    }

    fn converter(&self) -> Option<&dyn ConvertToMlir> {
        Some(self)
    }

    fn schema(&self) -> &OpSchema {
        &CONCAT_SCHEMA
    }

    fn infer(&self, ctx: &mut InferContext<'_>) -> Option<Vec<TensorType>> {
        let all: Vec<usize> = (0..ctx.operand_count()).collect();
        let element = ctx.same_element(&all)?;
        let first = ctx.operand(0);
        for i in 1..all.len() {
            let rank = ctx.operand(i).rank();
            if rank != first.rank() {
                ctx.operand_error(
                    i,
                    format!(
                        "operand #{i} has rank {rank}, but operand #0 has rank {}",
                        first.rank()
                    ),
                )?;
            }
        }
        let axis = ctx.axis("axis", first.rank())?;
        let mut shape = first.shape.clone();
        for i in 1..all.len() {
            let other = ctx.operand(i);
            for (d, (&a, &b)) in first.shape.iter().zip(&other.shape).enumerate() {
                if d != axis && a != b {
                    ctx.operand_error(i, format!("operand #{i} dimension {d} ({b}) does not match operand #0 ({a}); only axis {axis} may differ"))?;
                }
            }
            shape[axis] = match shape[axis].checked_add(other.shape[axis]) {
                Some(sum) => sum,
                None => {
                    return ctx
                        .error("concatenated dimension overflows")
                        .map(|_| Vec::new())
                }
            };
        }
        Some(vec![TensorType::new(shape, element)])
    }
}

/// `array.slice`.
pub struct Slice;

/// A strided window of a tensor.
pub static SLICE: Slice = Slice;

static SLICE_SCHEMA: OpSchema = OpSchema {
    dialect: "array",
    name: "slice",
    summary: "The strided window `x[start:limit:stride]` in every dimension.",
    description: "`y[i] = x[start + i * stride]` per dimension, with `0 <= start <= limit <= dim`, `stride >= 1` and `y.shape[d] = ceil((limit[d] - start[d]) / stride[d])`.",
    operands: X,
    literal: None,
    attrs: &[
        AttrSpec { name: "start", kind: AttrKind::IntList, default: AttrDefault::Required, doc: "first index per dimension" },
        AttrSpec { name: "limit", kind: AttrKind::IntList, default: AttrDefault::Required, doc: "one past the last index per dimension" },
        AttrSpec { name: "stride", kind: AttrKind::IntList, default: AttrDefault::Derived("1 in every dimension"), doc: "step per dimension, positive" },
    ],
    results: 1,
    result_type_required: false,
};

impl OpDef for Slice {
    /// It only moves or converts elements.
    fn moves_storage_types(&self) -> bool {
        true
    }

    fn transpose_rule(&self) -> TransposeRule {
        TransposeRule::Axes {
            per_dim: &["start", "limit", "stride"],
            axes: &[],
        }
    }

    fn converter(&self) -> Option<&dyn ConvertToMlir> {
        Some(self)
    }

    fn schema(&self) -> &OpSchema {
        &SLICE_SCHEMA
    }

    fn infer(&self, ctx: &mut InferContext<'_>) -> Option<Vec<TensorType>> {
        let x = ctx.operand(0);
        let rank = x.rank();
        let start = ctx.int_list_of("start", rank, 0)?;
        let limit = ctx.int_list_of("limit", rank, 0)?;
        let stride = match ctx.attr("stride") {
            Some(_) => ctx.int_list_of("stride", rank, 1)?,
            None => vec![1; rank],
        };
        let mut shape = Vec::with_capacity(rank);
        for d in 0..rank {
            let (s, l, dim) = (start[d] as u64, limit[d] as u64, x.shape[d]);
            if l > dim {
                ctx.attr_error(
                    "limit",
                    format!("limit ({l}) exceeds dimension {d} ({dim})"),
                )?;
            }
            if s > l {
                ctx.attr_error(
                    "start",
                    format!("start ({s}) exceeds limit ({l}) in dimension {d}"),
                )?;
            }
            shape.push((l - s).div_ceil(stride[d] as u64));
        }
        Some(vec![TensorType::new(shape, x.element)])
    }
}

/// `array.gather`.
pub struct Gather;

/// Slices of a tensor along an axis, chosen by a tensor of indices.
pub static GATHER: Gather = Gather;

static GATHER_SCHEMA: OpSchema = OpSchema {
    dialect: "array",
    name: "gather",
    summary: "Slices of `x` along `axis` picked by `indices` (an embedding lookup, `take` in numpy).",
    description: "With `q` the rank of `indices`: `y[o..., i_0, ..., i_{q-1}, r...] = x[o..., k, r...]` with `k = indices[i_0, ..., i_{q-1}]`, `o` the dimensions before `axis` and `r` those after; `y.shape = x.shape[..axis] + indices.shape + x.shape[axis + 1..]`. A negative index counts from the end (`-1` is the last); an index outside `[-dim, dim - 1]` is clamped into it, so compiled code never reads outside `x` (ONNX and numpy call such an index an error).",
    operands: &[
        OperandSpec { name: "x", arity: Arity::One, doc: "any shape, rank >= 1, the gathered axis not empty" },
        OperandSpec { name: "indices", arity: Arity::One, doc: "any shape, `i32` or `i64`" },
    ],
    literal: None,
    attrs: &[AttrSpec { name: "axis", kind: AttrKind::Int, default: AttrDefault::Value(DefaultValue::Int(0)), doc: "the gathered axis; negative counts from the end" }],
    results: 1,
    result_type_required: false,
};

impl OpDef for Gather {
    fn converter(&self) -> Option<&dyn ConvertToMlir> {
        Some(self)
    }

    fn schema(&self) -> &OpSchema {
        &GATHER_SCHEMA
    }

    fn infer(&self, ctx: &mut InferContext<'_>) -> Option<Vec<TensorType>> {
        let (x, indices, axis) = indexed_axis(ctx, "gather")?;
        let mut shape = x.shape[..axis].to_vec();
        shape.extend(&indices.shape);
        shape.extend(&x.shape[axis + 1..]);
        Some(vec![TensorType::new(shape, x.element)])
    }
}

/// The operands `x` and `indices` of an op that reads `x` along its `axis` attribute at
/// those indices, and that axis: the indices are `i32` or `i64` and the axis is not empty
/// (there would be nothing to `verb`).
fn indexed_axis(ctx: &mut InferContext<'_>, verb: &str) -> Option<(TensorType, TensorType, usize)> {
    let (x, indices) = (ctx.operand(0).clone(), ctx.operand(1).clone());
    if !matches!(indices.element, ElementType::I32 | ElementType::I64) {
        ctx.operand_error(
            1,
            format!(
                "operand 'indices' must have i32 or i64 elements, but has {}",
                indices.element
            ),
        )?;
    }
    let axis = ctx.axis("axis", x.rank())?;
    if x.shape[axis] == 0 {
        ctx.operand_error(
            0,
            format!("operand 'x' has an empty axis {axis}: nothing to {verb}"),
        )?;
    }
    Some((x, indices, axis))
}

/// `array.take_along`.
pub struct TakeAlong;

/// Elements picked along an axis, one index per result element.
pub static TAKE_ALONG: TakeAlong = TakeAlong;

static TAKE_ALONG_SCHEMA: OpSchema = OpSchema {
    dialect: "array",
    name: "take_along",
    summary: "Elements of `x` picked along `axis` by an index per result element (numpy's `take_along_axis`, ONNX's `GatherElements`).",
    description: "`y[i] = x[i with i[axis] replaced by indices[i]]`; `y` has the shape of `indices`, which has the rank of `x` and, on every other axis, at most its size. A negative index counts from the end (`-1` is the last); an index outside `[-dim, dim - 1]` is clamped into it, so compiled code never reads outside `x` (ONNX and numpy call such an index an error).",
    operands: &[
        OperandSpec { name: "x", arity: Arity::One, doc: "any shape, rank >= 1, the indexed axis not empty" },
        OperandSpec { name: "indices", arity: Arity::One, doc: "the rank of `x`, `i32` or `i64`" },
    ],
    literal: None,
    attrs: &[AttrSpec { name: "axis", kind: AttrKind::Int, default: AttrDefault::Value(DefaultValue::Int(0)), doc: "the indexed axis; negative counts from the end" }],
    results: 1,
    result_type_required: false,
};

impl OpDef for TakeAlong {
    fn converter(&self) -> Option<&dyn ConvertToMlir> {
        Some(self)
    }

    fn schema(&self) -> &OpSchema {
        &TAKE_ALONG_SCHEMA
    }

    fn infer(&self, ctx: &mut InferContext<'_>) -> Option<Vec<TensorType>> {
        let (x, indices, axis) = indexed_axis(ctx, "take")?;
        let fits = indices.rank() == x.rank()
            && (0..x.rank()).all(|d| d == axis || indices.shape[d] <= x.shape[d]);
        if !fits {
            ctx.operand_error(
                1,
                format!(
                    "operand 'indices' ({indices}) must have the rank of 'x' ({x}) and, off axis {axis}, no larger dimensions"
                ),
            )?;
        }
        Some(vec![TensorType::new(indices.shape.clone(), x.element)])
    }
}

/// Requires the padding value to be representable in `element`: an integer in range for
/// integer types (0 or 1 for `i1`), a number that does not overflow for float types.
fn check_pad_value(ctx: &mut InferContext<'_>, element: ElementType) -> Option<()> {
    let value = ctx.attr("value").unwrap_or(Attribute::Int(0));
    let problem = match (&value, element.class()) {
        (Attribute::Float(_), ElementClass::Int | ElementClass::Bool) => "must be an integer",
        (Attribute::Int(v), ElementClass::Int | ElementClass::Bool) => {
            let (min, max) = element.int_bounds();
            if (min..=max).contains(&i128::from(*v)) {
                return Some(());
            }
            "does not fit"
        }
        _ => {
            let v = value.as_f64().unwrap_or(0.0);
            if !v.is_finite() || round_to(v, element).is_finite() {
                return Some(());
            }
            "overflows"
        }
    };
    ctx.attr_error(
        "value",
        format!("attribute 'value' ({value}) {problem} in {element}"),
    )
}

/// `array.pad`.
pub struct Pad;

/// Surrounds a tensor with a constant.
pub static PAD: Pad = Pad;

static PAD_SCHEMA: OpSchema = OpSchema {
    dialect: "array",
    name: "pad",
    summary: "Surrounds `x` with `low[d]` and `high[d]` elements of `value` in each dimension.",
    description: "`y.shape[d] = low[d] + x.shape[d] + high[d]`; `y` is `value` except the window starting at `low`, which holds `x`. Padding amounts are non-negative; `value` is an integer for integer tensors (0 or 1 for `i1`).",
    operands: X,
    literal: None,
    attrs: &[
        AttrSpec { name: "low", kind: AttrKind::IntList, default: AttrDefault::Required, doc: "elements before, per dimension" },
        AttrSpec { name: "high", kind: AttrKind::IntList, default: AttrDefault::Required, doc: "elements after, per dimension" },
        AttrSpec { name: "value", kind: AttrKind::Number, default: AttrDefault::Value(DefaultValue::Int(0)), doc: "the padding value" },
    ],
    results: 1,
    result_type_required: false,
};

impl OpDef for Pad {
    fn transpose_rule(&self) -> TransposeRule {
        TransposeRule::Axes {
            per_dim: &["low", "high"],
            axes: &[],
        }
    }

    fn converter(&self) -> Option<&dyn ConvertToMlir> {
        Some(self)
    }

    fn schema(&self) -> &OpSchema {
        &PAD_SCHEMA
    }

    fn infer(&self, ctx: &mut InferContext<'_>) -> Option<Vec<TensorType>> {
        let x = ctx.operand(0);
        let low = ctx.int_list_of("low", x.rank(), 0)?;
        let high = ctx.int_list_of("high", x.rank(), 0)?;
        check_pad_value(ctx, x.element)?;
        let mut shape = Vec::with_capacity(x.rank());
        for d in 0..x.rank() {
            let padded = x.shape[d]
                .checked_add(low[d] as u64)
                .and_then(|n| n.checked_add(high[d] as u64));
            match padded {
                Some(n) => shape.push(n),
                None => {
                    return ctx
                        .error(format!("padded dimension {d} overflows"))
                        .map(|_| Vec::new())
                }
            }
        }
        Some(vec![TensorType::new(shape, x.element)])
    }
}
