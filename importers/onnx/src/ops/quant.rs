//! Quantization ONNX ops on integer types (2 to 16 bits) and the 8- and 4-bit floats:
//! `QuantizeLinear`, `DequantizeLinear` (per tensor, per axis or blocked),
//! `DynamicQuantizeLinear` and `QLinearMatMul`, as onnx's reference computes them: floats
//! scaled and rounded half to even, clipped to the type's range (to a float type: scaled and
//! cast, saturating).

use super::elementwise::onnx_cast;
use super::number::round_half_even;
use super::{axis_in, input, Inputs};
use crate::graph::{invalid, unsupported, Graph, NodeResult, Val};
use crate::node::Node;
use crate::tensor::element_type;
use tessera::types::{ElementClass, ElementType};

/// A scale or zero point shaped to broadcast against `x`: a scalar, one value per index of
/// `axis`, or (`block`) one per `block` consecutive indices of `axis`.
fn along_axis(g: &mut Graph, v: &Val, x: &Val, axis: i64, block: i64) -> NodeResult<Val> {
    let (v_ty, shape) = (g.ty(v), g.ty(x).shape);
    if v_ty.num_elements() == Some(1) {
        return g.reshape(v, vec![]);
    }
    let rank = shape.len();
    let axis = axis_in(axis, rank)?;
    if block <= 0 {
        let mut dims = vec![1; rank];
        dims[axis] = v_ty.num_elements().unwrap_or(0);
        return g.reshape(v, dims);
    }
    // Each value repeated `block` times along the axis, cut to the axis' length.
    let block = block as u64;
    if v_ty.rank() != rank {
        return invalid(format!("blocked quantization needs {v_ty} of rank {rank}"));
    }
    let mut spread = v_ty.shape.clone();
    spread.insert(axis + 1, 1);
    let mut repeated = spread.clone();
    repeated[axis + 1] = block;
    let spread = g.reshape(v, spread)?;
    let repeated = g.broadcast(&spread, repeated)?;
    let mut merged = v_ty.shape.clone();
    merged[axis] *= block;
    let merged_val = g.reshape(&repeated, merged.clone())?;
    let mut limit = merged;
    limit[axis] = shape[axis];
    g.slice(&merged_val, &vec![0; rank], &limit, &vec![1; rank])
}

/// A type quantized values may have (the 2- to 16-bit integers, the 8- and 4-bit floats), or
/// why not.
fn quantized_type(element: ElementType) -> NodeResult<ElementType> {
    match element {
        ElementType::U8 | ElementType::I8 | ElementType::U16 | ElementType::I16 => Ok(element),
        other if other.is_storage_only() => Ok(other),
        other => unsupported(format!("quantization to {other}")),
    }
}

/// `round_half_even(x) + zero_point`, clipped to `target`'s range and converted to it; for a
/// float `target`, `x + zero_point` cast to it (saturating when `saturate`).
fn quantized(
    g: &mut Graph,
    x: &Val,
    zero: Option<&Val>,
    target: ElementType,
    saturate: bool,
) -> NodeResult<Val> {
    let element = g.ty(x).element;
    if target.is_float() {
        let mut q = x.clone();
        if let Some(zero) = zero {
            let zero = g.cast(zero, element)?;
            q = g.binary("array.add", &q, &zero)?;
        }
        return onnx_cast(g, &q, target, saturate);
    }
    let mut q = round_half_even(g, x)?;
    if let Some(zero) = zero {
        let zero = g.cast(zero, element)?;
        q = g.binary("array.add", &q, &zero)?;
    }
    let (low, high) = target.int_bounds();
    let (low, high) = (
        g.scalar(low as f64, element),
        g.scalar(high as f64, element),
    );
    let q = g.binary("array.max", &q, &low)?;
    let q = g.binary("array.min", &q, &high)?;
    g.cast(&q, target)
}

/// `QuantizeLinear(x, y_scale, y_zero_point?)`.
pub fn quantize_linear(g: &mut Graph, node: &Node, inputs: &Inputs) -> NodeResult<Vec<Val>> {
    let (x, scale) = (input(inputs, 0)?, input(inputs, 1)?);
    let zero = inputs.get(2).cloned().flatten();
    let target = match (&zero, node.attr("output_dtype")) {
        (Some(z), _) => g.ty(z).element,
        (None, Some(a)) if a.i != 0 => element_type(a.i as i32)
            .map_err(|e| crate::graph::NodeError::Unsupported(format!("output_dtype {e}")))?,
        _ => ElementType::U8,
    };
    let target = quantized_type(target)?;
    let (axis, block) = (node.int("axis", 1), node.int("block_size", 0));
    let wide = match g.ty(&x).element {
        ElementType::F64 => ElementType::F64,
        _ => ElementType::F32,
    };
    let scale = along_axis(g, &scale, &x, axis, block)?;
    let zero = match zero {
        Some(z) => Some(along_axis(g, &z, &x, axis, block)?),
        None => None,
    };
    let xs = g.cast(&x, wide)?;
    let scale = g.cast(&scale, wide)?;
    let ratio = g.binary("array.div", &xs, &scale)?;
    let saturate = node.int("saturate", 1) != 0;
    Ok(vec![quantized(g, &ratio, zero.as_ref(), target, saturate)?])
}

/// `DequantizeLinear(x, x_scale, x_zero_point?)`: `(x - zero_point) * scale`, in f32, as the
/// scale's type (or `output_dtype`).
pub fn dequantize_linear(g: &mut Graph, node: &Node, inputs: &Inputs) -> NodeResult<Vec<Val>> {
    let (x, scale) = (input(inputs, 0)?, input(inputs, 1)?);
    quantized_type(g.ty(&x).element)?;
    let (axis, block) = (node.int("axis", 1), node.int("block_size", 0));
    let output = match node.attr("output_dtype") {
        Some(a) if a.i != 0 => element_type(a.i as i32)
            .map_err(|e| crate::graph::NodeError::Unsupported(format!("output_dtype {e}")))?,
        _ => g.ty(&scale).element,
    };
    let mut dx = g.cast(&x, ElementType::F32)?;
    if let Some(Some(zero)) = inputs.get(2) {
        let zero = along_axis(g, zero, &x, axis, block)?;
        let zero = g.cast(&zero, ElementType::F32)?;
        dx = g.binary("array.sub", &dx, &zero)?;
    }
    let scale = along_axis(g, &scale, &x, axis, block)?;
    let scale = g.cast(&scale, ElementType::F32)?;
    let y = g.binary("array.mul", &dx, &scale)?;
    Ok(vec![g.cast(&y, output)?])
}

/// `DynamicQuantizeLinear(x)`: `ui8` values, the scale spanning `[min(x, 0), max(x, 0)]`
/// over 255 steps, and the zero point.
pub fn dynamic_quantize_linear(g: &mut Graph, _: &Node, inputs: &Inputs) -> NodeResult<Vec<Val>> {
    let x = input(inputs, 0)?;
    let ty = g.ty(&x);
    if ty.element != ElementType::F32 {
        return invalid(format!("its input is {ty}, not f32"));
    }
    let axes: Vec<i64> = (0..ty.rank() as i64).collect();
    let zero = g.scalar(0.0, ElementType::F32);
    let max = g.reduce("array.reduce_max", &x, &axes, false)?;
    let min = g.reduce("array.reduce_min", &x, &axes, false)?;
    let high = g.binary("array.max", &max, &zero)?;
    let low = g.binary("array.min", &min, &zero)?;
    let span = g.binary("array.sub", &high, &low)?;
    let steps = g.scalar(255.0, ElementType::F32);
    let scale = g.binary("array.div", &span, &steps)?;
    let shift = g.binary("array.div", &low, &scale)?;
    let shift = g.unary("array.neg", &shift)?;
    let zero_point = quantized(g, &shift, None, ElementType::U8, true)?;
    let ratio = g.binary("array.div", &x, &scale)?;
    let y = quantized(g, &ratio, Some(&zero_point), ElementType::U8, true)?;
    Ok(vec![y, scale, zero_point])
}

/// `QLinearMatMul(a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp)`: the integer product of
/// the zero-point-free operands (in i32), scaled by `a_scale b_scale / y_scale` (in f64),
/// quantized to `y_zp`'s type.
pub fn qlinear_matmul(g: &mut Graph, _: &Node, inputs: &Inputs) -> NodeResult<Vec<Val>> {
    let operand = |g: &mut Graph, v: usize, zp: usize| -> NodeResult<Val> {
        let q = input(inputs, v)?;
        if g.ty(&q).element.class() != ElementClass::Int {
            return invalid(format!("input #{v} is {}, not integers", g.ty(&q)));
        }
        let wide = g.cast(&q, ElementType::I32)?;
        match inputs.get(zp).cloned().flatten() {
            Some(z) => {
                let z = g.cast(&z, ElementType::I32)?;
                g.binary("array.sub", &wide, &z)
            }
            None => Ok(wide),
        }
    };
    let a = operand(g, 0, 2)?;
    let b = operand(g, 3, 5)?;
    let product = g.op("array.matmul", &[a, b], &[], None)?;
    let product = g.cast(&product, ElementType::F64)?;
    let f32_input = |g: &mut Graph, i: usize| -> NodeResult<Val> {
        let v = input(inputs, i)?;
        g.cast(&v, ElementType::F32)
    };
    let (sa, sb, sy) = (f32_input(g, 1)?, f32_input(g, 4)?, f32_input(g, 6)?);
    let sab = g.binary("array.mul", &sa, &sb)?;
    let factor = g.binary("array.div", &sab, &sy)?;
    let factor = g.cast(&factor, ElementType::F64)?;
    let scaled = g.binary("array.mul", &product, &factor)?;
    let zero = inputs.get(7).cloned().flatten();
    let target = match &zero {
        Some(z) => g.ty(z).element,
        None => g.ty(&input(inputs, 0)?).element,
    };
    let target = quantized_type(target)?;
    Ok(vec![quantized(g, &scaled, zero.as_ref(), target, true)?])
}
