//! Conversion of the `nn` layers that MLIR has named ops for: `conv2d` to
//! `linalg.conv_2d_nhwc_hwcf`, pooling to `linalg.pooling_nhwc_max` / `_sum`. Padding becomes
//! an explicitly padded input; the bias and the average's divisor are elementwise ops.

use crate::conv::Conv2d;
use crate::pool::{Pool, PoolKind};
use crate::window::{window_geometry, WindowGeometry};
use melior::ir::attribute::{DenseElementsAttribute, IntegerAttribute};
use melior::ir::r#type::{IntegerType, RankedTensorType};
use melior::ir::{Attribute, Identifier, Value};
use tessera::attr::Attribute as TsrAttribute;
use tessera::mlir::bridge::emit::{scalar_of, ConvertError, ConvertResult, Emitter};
use tessera::mlir::bridge::layout::ReductionIdentity;
use tessera::mlir::bridge::lowering::{ConvertToMlir, OpConversion};
use tessera::types::TensorType;

type Results<'c, 'a> = ConvertResult<Vec<Value<'c, 'a>>>;

/// Attribute `name` as two integers, `absent` when not written.
fn pair(op: &OpConversion<'_, '_, '_>, name: &str, absent: [u64; 2]) -> [u64; 2] {
    match op.int_list(name).as_slice() {
        [a, b] => [*a as u64, *b as u64],
        _ => absent,
    }
}

/// `dense<[a, b]> : tensor<2xi64>`, the form named convolution ops take strides in.
fn i64_pair<'c>(
    e: &Emitter<'c, '_>,
    name: &str,
    values: [u64; 2],
) -> ConvertResult<(Identifier<'c>, Attribute<'c>)> {
    let i64_type = IntegerType::new(e.context, 64).into();
    let elements: Vec<Attribute<'c>> = values
        .iter()
        .map(|&v| IntegerAttribute::new(i64_type, v as i64).into())
        .collect();
    let ty = RankedTensorType::new(&[2], i64_type, None).into();
    Ok(e.named(name, DenseElementsAttribute::new(ty, &elements)?.into()))
}

/// The padding and output size of a window op's `padding` attribute over its NHWC input.
fn geometry_of(
    op: &OpConversion<'_, '_, '_>,
    window: [u64; 2],
    strides: [u64; 2],
    dilations: [u64; 2],
) -> ConvertResult<WindowGeometry> {
    let x = op.operand_types[0];
    let padding = op
        .attr("padding")
        .unwrap_or(TsrAttribute::Str("valid".into()));
    window_geometry(
        &padding,
        [x.shape[1], x.shape[2]],
        window,
        strides,
        dilations,
    )
    .map_err(|e| ConvertError(format!("{e:?}")))
}

/// `x` padded for a window op: `[top, bottom, left, right]` around H and W, with `value`.
fn padded_input<'c, 'a>(
    op: &OpConversion<'c, 'a, '_>,
    window: [u64; 2],
    strides: [u64; 2],
    dilations: [u64; 2],
    value: f64,
) -> ConvertResult<(Value<'c, 'a>, TensorType)> {
    let x = op.operand_types[0];
    let [top, bottom, left, right] = geometry_of(op, window, strides, dilations)?.padding;
    op.emit.pad(
        op.operands[0],
        x,
        &[0, top, left, 0],
        &[0, bottom, right, 0],
        scalar_of(x.element, value),
    )
}

impl ConvertToMlir for Conv2d {
    fn lowering(&self) -> &'static str {
        "`linalg.conv_2d_nhwc_hwcf` on an explicitly padded input, bias as a `linalg.generic`"
    }

    fn convert<'c, 'a>(&self, op: &OpConversion<'c, 'a, '_>) -> Results<'c, 'a> {
        let e = &op.emit;
        let w = op.operand_types[1];
        let result = op.result();
        let strides = pair(op, "strides", [1, 1]);
        let dilations = pair(op, "dilations", [1, 1]);
        let (input, _) = padded_input(op, [w.shape[0], w.shape[1]], strides, dilations, 0.0)?;
        // f16 and bf16 products accumulate in f32, then round once.
        let accumulated_ty = result.with_element(result.element.accumulator());
        let init = e.fill(&accumulated_ty, 0.0)?;
        let (narrow, wide) = (result.element, accumulated_ty.element);
        let element = e.element_type(narrow);
        let attributes = vec![
            i64_pair(e, "strides", strides)?,
            i64_pair(e, "dilations", dilations)?,
        ];
        let accumulated = e.structured(
            "linalg.conv_2d_nhwc_hwcf",
            &[input, op.operands[1]],
            &[(init, &accumulated_ty)],
            attributes,
            &[element, element, e.element_type(wide)],
            |inner, x| {
                let a = inner.float_as(x[0], narrow, wide)?;
                let b = inner.float_as(x[1], narrow, wide)?;
                let product = inner.same("arith.mulf", &[a, b])?;
                Ok(vec![inner.same("arith.addf", &[x[2], product])?])
            },
        )?[0];
        let conv = e.rounded(accumulated, &accumulated_ty, result)?;
        let Some((&bias, &bias_ty)) = op.operands.get(2).zip(op.operand_types.get(2)) else {
            return Ok(vec![conv]);
        };
        let sum = e.elementwise(&[(conv, result), (bias, bias_ty)], result, |inner, x| {
            inner.same("arith.addf", &[x[0], x[1]])
        })?;
        Ok(vec![sum])
    }
}

impl ConvertToMlir for Pool {
    fn lowering(&self) -> &'static str {
        "`linalg.pooling_nhwc_max` / `linalg.pooling_nhwc_sum` on a padded input; the average divides by a pooled count of in-input positions"
    }

    fn convert<'c, 'a>(&self, op: &OpConversion<'c, 'a, '_>) -> Results<'c, 'a> {
        let window = pair(op, "window", [1, 1]);
        let strides = pair(op, "strides", window);
        let dilations = pair(op, "dilations", [1, 1]);
        let slide = Slide {
            window,
            strides,
            dilations,
        };
        let result = op.result();
        let element = result.element;
        let e = &op.emit;
        match self.kind {
            PoolKind::Max => {
                let lowest = ReductionIdentity::Lowest.value(element);
                let (input, _) = padded_input(op, window, strides, dilations, lowest)?;
                Ok(vec![pool(
                    e,
                    "linalg.pooling_nhwc_max",
                    "arith.maximumf",
                    input,
                    slide,
                    result,
                    lowest,
                )?])
            }
            PoolKind::Avg => {
                let (input, _) = padded_input(op, window, strides, dilations, 0.0)?;
                let sums = pool(
                    e,
                    "linalg.pooling_nhwc_sum",
                    "arith.addf",
                    input,
                    slide,
                    result,
                    0.0,
                )?;
                // How many positions of each window lie inside the input: the same sum over
                // a padded tensor of ones (one image, one channel), broadcast over N and C.
                let x = op.operand_types[0];
                let ones_ty = TensorType::new(vec![1, x.shape[1], x.shape[2], 1], element);
                let ones = e.splat(&ones_ty, 1.0)?;
                let [top, bottom, left, right] =
                    geometry_of(op, window, strides, dilations)?.padding;
                let (padded_ones, _) = e.pad(
                    ones,
                    &ones_ty,
                    &[0, top, left, 0],
                    &[0, bottom, right, 0],
                    scalar_of(element, 0.0),
                )?;
                let count_ty =
                    TensorType::new(vec![1, result.shape[1], result.shape[2], 1], element);
                let counts = pool(
                    e,
                    "linalg.pooling_nhwc_sum",
                    "arith.addf",
                    padded_ones,
                    slide,
                    &count_ty,
                    0.0,
                )?;
                let mean = e.elementwise(
                    &[(sums, result), (counts, &count_ty)],
                    result,
                    |inner, x| inner.same("arith.divf", &[x[0], x[1]]),
                )?;
                Ok(vec![mean])
            }
        }
    }
}

/// How a pooling window slides: its size, strides and dilations (height, width).
#[derive(Clone, Copy)]
struct Slide {
    window: [u64; 2],
    strides: [u64; 2],
    dilations: [u64; 2],
}

/// A named NHWC pooling op over `input` sliding as `slide`, combining with `combine`, into a
/// tensor of `result` type filled with `init`.
fn pool<'c, 'a>(
    e: &Emitter<'c, 'a>,
    name: &str,
    combine: &'static str,
    input: Value<'c, 'a>,
    slide: Slide,
    result: &TensorType,
    init: f64,
) -> ConvertResult<Value<'c, 'a>> {
    let window_ty = TensorType::new(slide.window.to_vec(), result.element);
    let window_tensor = e.empty(&window_ty)?;
    // f16 and bf16 sums accumulate in f32, then round once (a maximum is exact anyway).
    let (narrow, wide) = match combine {
        "arith.addf" => (result.element, result.element.accumulator()),
        _ => (result.element, result.element),
    };
    let accumulated_ty = result.with_element(wide);
    let output = e.fill(&accumulated_ty, init)?;
    let element = e.element_type(narrow);
    let attributes = vec![
        i64_pair(e, "strides", slide.strides)?,
        i64_pair(e, "dilations", slide.dilations)?,
    ];
    let pooled = e.structured(
        name,
        &[input, window_tensor],
        &[(output, &accumulated_ty)],
        attributes,
        &[element, element, e.element_type(wide)],
        |inner, x| {
            let value = inner.float_as(x[0], narrow, wide)?;
            Ok(vec![inner.same(combine, &[x[2], value])?])
        },
    )?;
    e.rounded(pooled[0], &accumulated_ty, result)
}
