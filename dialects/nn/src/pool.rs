//! 2-d pooling over NHWC inputs, windows strided and dilated: max_pool2d and avg_pool2d.

use crate::conv::{geometry, pair_or, WindowSource, DILATIONS, PADDING_KEYWORDS};
use crate::X;
use tessera::dialect::Attrs;
use tessera::dialect::{AttrDefault, AttrKind, AttrSpec, DefaultValue, OpDef, OpSchema};
use tessera::infer::InferContext;
use tessera::mlir::bridge::lowering::ConvertToMlir;
use tessera::types::{ElementClass, TensorType};

/// The ops of the `Pool` family, so that evaluation and conversion match on a type, not
/// on names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PoolKind {
    /// `max_pool2d`.
    Max,
    /// `avg_pool2d`.
    Avg,
}

/// A 2-d pooling op.
pub struct Pool {
    /// Which op of the family this is.
    pub kind: PoolKind,
    schema: OpSchema,
}

const ATTRS: &[AttrSpec] = &[
    AttrSpec {
        name: "window",
        kind: AttrKind::IntList,
        default: AttrDefault::Required,
        doc: "`[kh, kw]`, positive",
    },
    AttrSpec {
        name: "strides",
        kind: AttrKind::IntList,
        default: AttrDefault::Derived("the window"),
        doc: "`[sh, sw]`, positive",
    },
    DILATIONS,
    AttrSpec {
        name: "padding",
        kind: AttrKind::IntListOrEnum(PADDING_KEYWORDS),
        default: AttrDefault::Value(DefaultValue::Str("valid")),
        doc: "`\"same\"`, `\"valid\"` or `[top, bottom, left, right]`",
    },
];

const fn pool(
    kind: PoolKind,
    name: &'static str,
    summary: &'static str,
    description: &'static str,
) -> Pool {
    Pool {
        kind,
        schema: OpSchema {
            dialect: "nn",
            name,
            summary,
            description,
            operands: X,
            literal: None,
            attrs: ATTRS,
            results: 1,
            result_type_required: false,
        },
    }
}

impl OpDef for Pool {
    /// Averages add their window; maxima round nothing.
    fn accumulated_terms(
        &self,
        _: &[&TensorType],
        _: &[&TensorType],
        attrs: &Attrs,
    ) -> Option<u64> {
        (self.kind == PoolKind::Avg).then(|| window_size(attrs))
    }

    /// One operation per output element and window position.
    fn flops(&self, _: &[&TensorType], results: &[&TensorType], attrs: &Attrs) -> u64 {
        results[0]
            .num_elements()
            .unwrap_or(0)
            .saturating_mul(window_size(attrs))
    }

    fn converter(&self) -> Option<&dyn ConvertToMlir> {
        Some(self)
    }

    fn schema(&self) -> &OpSchema {
        &self.schema
    }

    fn infer(&self, ctx: &mut InferContext<'_>) -> Option<Vec<TensorType>> {
        ctx.require_class(0, &[ElementClass::Float])?;
        ctx.require_rank(0, 4, "an NHWC input")?;
        let window = ctx.int_list_of("window", 2, 1)?;
        let window = [window[0] as u64, window[1] as u64];
        let strides = pair_or(ctx, "strides", window)?;
        let dilations = pair_or(ctx, "dilations", [1, 1])?;
        if let Some(pads) = ctx.int_list("padding") {
            // The window's span: its first to its last position, dilations included.
            let span = |d: usize| i128::from(window[d] - 1) * i128::from(dilations[d]) + 1;
            let too_large = pads
                .iter()
                .zip([span(0), span(0), span(1), span(1)])
                .find(|(&p, span)| i128::from(p) >= *span);
            if let Some((pad, span)) = too_large {
                ctx.attr_error("padding", format!("padding ({pad}) must be smaller than the window's span ({span}), so that no window lies in the padding alone"))?;
            }
        }
        let x = ctx.operand(0);
        let [h, w] = geometry(
            ctx,
            WindowSource::Attr("window"),
            [x.shape[1], x.shape[2]],
            window,
            strides,
            dilations,
        )?;
        Some(vec![TensorType::new(
            vec![x.shape[0], h, w, x.shape[3]],
            x.element,
        )])
    }
}

/// The positions of a pool's window (the product of its `window` sizes, saturating).
fn window_size(attrs: &Attrs) -> u64 {
    attrs
        .get("window")
        .and_then(|w| w.as_int_list())
        .map_or(1, |w| {
            w.iter()
                .fold(1u64, |n, &d| n.saturating_mul(d.max(1) as u64))
        })
}

/// Max pooling.
pub static MAX_POOL2D: Pool = pool(
    PoolKind::Max,
    "max_pool2d",
    "Maximum over each `window` of an NHWC input, per channel.",
    "`y[n, i, j, c] = max_{p < kh, q < kw} x[n, i*sh + p*dh - top, j*sw + q*dw - left, c]` over the window positions inside the input (padding never wins). Output size and `padding` as in `nn.conv2d`, each explicit padding smaller than the window's span `(k - 1) * d + 1`; `strides` default to the window (as Keras). A dilated window can still miss an input smaller than its dilation: it gives -inf.",
);
/// Average pooling.
pub static AVG_POOL2D: Pool = pool(
    PoolKind::Avg,
    "avg_pool2d",
    "Mean over each `window` of an NHWC input, per channel.",
    "`y[n, i, j, c]` is the mean of `x` over the window positions inside the input (`x[n, i*sh + p*dh - top, j*sw + q*dw - left, c]`): padded positions are not counted (as TensorFlow). Output size and `padding` as in `nn.conv2d`, each explicit padding smaller than the window's span `(k - 1) * d + 1`; `strides` default to the window (as Keras). A dilated window can still miss an input smaller than its dilation: it gives NaN (no positions to average).",
);
