//! `nn.conv2d`: 2-d convolution, NHWC input and HWCF filter.

use crate::window::{window_geometry, WindowError};
use tessera::attr::Attribute;
use tessera::dialect::Attrs;
use tessera::dialect::{
    Arity, AttrDefault, AttrKind, AttrSpec, DefaultValue, OpDef, OpSchema, OperandSpec,
};
use tessera::infer::InferContext;
use tessera::mlir::bridge::lowering::ConvertToMlir;
use tessera::types::{ElementClass, TensorType};

/// `nn.conv2d`.
pub struct Conv2d;

/// 2-d convolution.
pub static CONV2D: Conv2d = Conv2d;

/// The padding keywords of windowed ops.
pub const PADDING_KEYWORDS: &[&str] = &["same", "valid"];

/// The window attributes of convolutions.
const STRIDES: AttrSpec = AttrSpec {
    name: "strides",
    kind: AttrKind::IntList,
    default: AttrDefault::Derived("[1, 1]"),
    doc: "`[sh, sw]`, positive",
};
const PADDING: AttrSpec = AttrSpec {
    name: "padding",
    kind: AttrKind::IntListOrEnum(PADDING_KEYWORDS),
    default: AttrDefault::Value(DefaultValue::Str("valid")),
    doc: "`\"same\"`, `\"valid\"` or `[top, bottom, left, right]`",
};
/// Window dilations, shared with pooling.
pub const DILATIONS: AttrSpec = AttrSpec {
    name: "dilations",
    kind: AttrKind::IntList,
    default: AttrDefault::Derived("[1, 1]"),
    doc: "`[dh, dw]`, positive",
};
static CONV_ATTRS: [AttrSpec; 3] = [STRIDES, PADDING, DILATIONS];

static SCHEMA: OpSchema = OpSchema {
    dialect: "nn",
    name: "conv2d",
    summary: "2-d convolution (cross-correlation) of an NHWC input with an HWCF filter, plus an optional bias.",
    description: "`y[n, i, j, f] = b[f] + sum_{p, q, c} xp[n, i*sh + p*dh, j*sw + q*dw, c] * w[p, q, c, f]` with `xp` the zero-padded input. Output size per spatial dimension: `floor((in + pad_lo + pad_hi - ((k - 1) * d + 1)) / s) + 1`. `padding = \"same\"` pads as TensorFlow (output `ceil(in / s)`, the smaller half of the padding before), `\"valid\"` not at all, `[top, bottom, left, right]` explicitly.",
    operands: &[
        OperandSpec { name: "x", arity: Arity::One, doc: "`[N, H, W, C]`, float" },
        OperandSpec { name: "w", arity: Arity::One, doc: "`[KH, KW, C, F]`" },
        OperandSpec { name: "b", arity: Arity::Optional, doc: "`[F]`" },
    ],
    literal: None,
    attrs: &CONV_ATTRS,
    results: 1,
    result_type_required: false,
};

/// Attribute `name` as two positive integers, `[1, 1]` when absent.
pub fn pair_or(ctx: &mut InferContext<'_>, name: &str, absent: [u64; 2]) -> Option<[u64; 2]> {
    if ctx.attr(name).is_none() {
        return Some(absent);
    }
    let values = ctx.int_list_of(name, 2, 1)?;
    Some([values[0] as u64, values[1] as u64])
}

/// Where a window that does not fit is reported: the filter operand, or the window attribute.
#[derive(Clone, Copy)]
pub enum WindowSource {
    /// The window is the shape of this operand.
    Operand(usize),
    /// The window is this attribute.
    Attr(&'static str),
}

/// The resolved output size; a malformed padding is reported at `padding`, a window that does
/// not fit at `source`.
pub fn geometry(
    ctx: &mut InferContext<'_>,
    source: WindowSource,
    input: [u64; 2],
    window: [u64; 2],
    strides: [u64; 2],
    dilations: [u64; 2],
) -> Option<[u64; 2]> {
    let padding = ctx
        .attr("padding")
        .unwrap_or(Attribute::Str("valid".into()));
    match window_geometry(&padding, input, window, strides, dilations) {
        Ok(g) => {
            // The padded input and the window are tensors of their own once lowered: their
            // sizes must fit in i64 as every tensor's do.
            let x = ctx.operand(0);
            let [top, bottom, left, right] = g.padding.map(u128::from);
            let padded = [
                u128::from(x.shape[0]),
                u128::from(input[0]) + top + bottom,
                u128::from(input[1]) + left + right,
                u128::from(x.shape[3]),
            ];
            // Counted in bytes: a buffer's size in bytes is an i64 too.
            let limit = i64::MAX as u128 / u128::from(x.element.bit_width().div_ceil(8));
            let count = |dims: &[u128]| {
                dims.iter()
                    .try_fold(1u128, |n, &d| n.checked_mul(d).filter(|&n| n <= limit))
            };
            if count(&padded).is_none() {
                let shape = padded.map(|d| d.to_string()).join("x");
                return ctx
                    .attr_error(
                        "padding",
                        format!("pads its input to {shape}, more bytes than fit in i64"),
                    )
                    .map(|_| [0, 0]);
            }
            if count(&window.map(u128::from)).is_none() {
                let message = format!(
                    "window ({}x{}) has more bytes than fit in i64",
                    window[0], window[1]
                );
                return match source {
                    WindowSource::Operand(index) => ctx.operand_error(index, message),
                    WindowSource::Attr(name) => ctx.attr_error(name, message),
                }
                .map(|_| [0, 0]);
            }
            Some(g.output)
        }
        Err(WindowError::Padding(message)) => ctx.attr_error("padding", message).map(|_| [0, 0]),
        Err(WindowError::TooLarge(message)) => match source {
            WindowSource::Operand(index) => ctx.operand_error(index, message),
            WindowSource::Attr(name) => ctx.attr_error(name, message),
        }
        .map(|_| [0, 0]),
    }
}

impl OpDef for Conv2d {
    /// Each element is a dot product over the filter's taps (KH x KW x C), plus the bias.
    fn accumulated_terms(
        &self,
        operands: &[&TensorType],
        _: &[&TensorType],
        _: &Attrs,
    ) -> Option<u64> {
        let taps: u64 = operands[1].shape[..3].iter().product();
        Some(taps + u64::from(operands.len() > 2))
    }

    /// A multiply-add per output element and filter tap (KH x KW x C), plus the bias.
    fn flops(&self, operands: &[&TensorType], results: &[&TensorType], _: &Attrs) -> u64 {
        let taps: u64 = operands[1].shape[..3].iter().product();
        let outputs = results[0].num_elements().unwrap_or(0);
        let bias = if operands.len() > 2 { outputs } else { 0 };
        2 * outputs * taps + bias
    }

    fn converter(&self) -> Option<&dyn ConvertToMlir> {
        Some(self)
    }

    fn schema(&self) -> &OpSchema {
        &SCHEMA
    }

    fn infer(&self, ctx: &mut InferContext<'_>) -> Option<Vec<TensorType>> {
        infer_conv(ctx, 1)
    }
}

/// The shape rule of `nn.conv2d` (`groups` 1) and `nn.group_conv2d`: the filter's input
/// channels times `groups` are the input's, its filter count a multiple of `groups`.
pub fn infer_conv(ctx: &mut InferContext<'_>, groups: u64) -> Option<Vec<TensorType>> {
    let all: Vec<usize> = (0..ctx.operand_count()).collect();
    ctx.require_class(0, &[ElementClass::Float])?;
    ctx.same_element(&all)?;
    ctx.require_rank(0, 4, "an NHWC input")?;
    ctx.require_rank(1, 4, "an HWCF filter")?;
    if groups == 1 {
        ctx.require_dim_match((0, 3), (1, 2), "input channels differ")?;
    } else {
        let (c, w) = (ctx.operand(0).shape[3], ctx.operand(1).shape.clone());
        if w[2].checked_mul(groups) != Some(c) {
            ctx.operand_error(
                1,
                format!(
                    "filter has {} input channels per group; {groups} groups of them are {}, but the input has {c}",
                    w[2],
                    u128::from(w[2]) * u128::from(groups)
                ),
            )?;
        }
        if w[3] % groups != 0 {
            ctx.operand_error(
                1,
                format!("filter count {} is not a multiple of {groups} groups", w[3]),
            )?;
        }
    }
    if ctx.optional_operand(2).is_some() {
        ctx.require_rank(2, 1, "a [F] bias vector")?;
        ctx.require_dim_match((1, 3), (2, 0), "bias size differs from the filter count")?;
    }
    let strides = pair_or(ctx, "strides", [1, 1])?;
    let dilations = pair_or(ctx, "dilations", [1, 1])?;
    let (x, w) = (ctx.operand(0), ctx.operand(1));
    if w.shape[0] == 0 || w.shape[1] == 0 {
        ctx.operand_error(1, "operand 'w' has an empty window (0 rows or columns)")?;
    }
    let [h, wd] = geometry(
        ctx,
        WindowSource::Operand(1),
        [x.shape[1], x.shape[2]],
        [w.shape[0], w.shape[1]],
        strides,
        dilations,
    )?;
    Some(vec![TensorType::new(
        vec![x.shape[0], h, wd, w.shape[3]],
        x.element,
    )])
}

/// `nn.group_conv2d`.
pub struct GroupConv2d;

/// 2-d convolution in groups (depthwise when each group is one input channel).
pub static GROUP_CONV2D: GroupConv2d = GroupConv2d;

static GROUP_ATTRS: [AttrSpec; 4] = [
    AttrSpec {
        name: "groups",
        kind: AttrKind::Int,
        default: AttrDefault::Required,
        doc: "`G`, positive, dividing `C` and `F`",
    },
    STRIDES,
    PADDING,
    DILATIONS,
];

static GROUP_SCHEMA: OpSchema = OpSchema {
    dialect: "nn",
    name: "group_conv2d",
    summary: "2-d convolution in `groups` independent groups of channels (depthwise when each group is one input channel), NHWC input, HWCF filter, optional bias.",
    description: "The input's `C` channels and the `F` filters split into `G = groups` groups in order; group `g` convolves input channels `g*C/G .. (g+1)*C/G` with filters `g*F/G .. (g+1)*F/G`, whose filter slice `w[:, :, :, that range]` has `C/G` input channels: `y[n, i, j, f] = b[f] + sum_{p, q, c < C/G} xp[n, i*sh + p*dh, j*sw + q*dw, g*C/G + c] * w[p, q, c, f]` with `g = f / (F/G)`. `G = C` is a depthwise convolution with `F/C` filters per channel (Keras `DepthwiseConv2D`, PyTorch `groups = in_channels`), `G = 1` is `nn.conv2d`. Strides, dilations, padding and output size as in `nn.conv2d`.",
    operands: &[
        OperandSpec { name: "x", arity: Arity::One, doc: "`[N, H, W, C]`, float" },
        OperandSpec { name: "w", arity: Arity::One, doc: "`[KH, KW, C/G, F]`" },
        OperandSpec { name: "b", arity: Arity::Optional, doc: "`[F]`" },
    ],
    literal: None,
    attrs: &GROUP_ATTRS,
    results: 1,
    result_type_required: false,
};

impl OpDef for GroupConv2d {
    /// Each element is a dot product over its group's taps (KH x KW x C/G), plus the bias.
    fn accumulated_terms(
        &self,
        operands: &[&TensorType],
        results: &[&TensorType],
        attrs: &Attrs,
    ) -> Option<u64> {
        CONV2D.accumulated_terms(operands, results, attrs)
    }

    /// A multiply-add per output element and tap of its group, plus the bias.
    fn flops(&self, operands: &[&TensorType], results: &[&TensorType], attrs: &Attrs) -> u64 {
        CONV2D.flops(operands, results, attrs)
    }

    fn decomposition(&self) -> Option<&dyn tessera::transforms::decompose::Decompose> {
        Some(self)
    }

    fn schema(&self) -> &OpSchema {
        &GROUP_SCHEMA
    }

    fn infer(&self, ctx: &mut InferContext<'_>) -> Option<Vec<TensorType>> {
        let groups = ctx.int("groups");
        if groups < 1 {
            ctx.attr_error(
                "groups",
                format!("attribute 'groups' must be positive, but is {groups}"),
            )?;
        }
        infer_conv(ctx, groups as u64)
    }
}
