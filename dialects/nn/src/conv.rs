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
    attrs: &[
        AttrSpec { name: "strides", kind: AttrKind::IntList, default: AttrDefault::Derived("[1, 1]"), doc: "`[sh, sw]`, positive" },
        AttrSpec { name: "padding", kind: AttrKind::IntListOrEnum(PADDING_KEYWORDS), default: AttrDefault::Value(DefaultValue::Str("valid")), doc: "`\"same\"`, `\"valid\"` or `[top, bottom, left, right]`" },
        AttrSpec { name: "dilations", kind: AttrKind::IntList, default: AttrDefault::Derived("[1, 1]"), doc: "`[dh, dw]`, positive" },
    ],
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
        let all: Vec<usize> = (0..ctx.operand_count()).collect();
        ctx.require_class(0, &[ElementClass::Float])?;
        ctx.same_element(&all)?;
        ctx.require_rank(0, 4, "an NHWC input")?;
        ctx.require_rank(1, 4, "an HWCF filter")?;
        ctx.require_dim_match((0, 3), (1, 2), "input channels differ")?;
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
}
