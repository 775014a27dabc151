//! ONNX ops that write one-hot or identity patterns: `OneHot`, `EyeLike`, `Hardmax`, each a
//! comparison against positions along an axis.

use super::{axis_in, input, Inputs};
use crate::graph::{invalid, Graph, NodeResult, Val};
use crate::node::Node;
use crate::tensor::element_type;
use tessera::attr::Attribute;
use tessera::exec::tensor::Tensor;
use tessera::types::{ElementType, TensorType};

/// The positions `0, 1, ..., n - 1` of `element` type, shaped to lie along axis `axis` of a
/// rank-`rank` tensor (1 on every other axis).
fn positions(g: &Graph, n: u64, axis: usize, rank: usize, element: ElementType) -> Val {
    let mut shape = vec![1; rank];
    shape[axis] = n;
    g.constant(Tensor::from_numbers(
        &TensorType::new(shape, element),
        (0..n).map(|i| i as f64),
    ))
}

/// `OneHot(indices, depth, values)`: a new axis of size `depth` at `axis`, `values[1]` at
/// each index (negative ones counted from the end) and `values[0]` elsewhere; an index out
/// of range marks nothing.
pub fn one_hot(g: &mut Graph, node: &Node, inputs: &Inputs) -> NodeResult<Vec<Val>> {
    let indices = input(inputs, 0)?;
    let depth = g.numbers(&input(inputs, 1)?, "the depth input")?;
    let values = input(inputs, 2)?;
    let [depth] = depth[..] else {
        return invalid("depth must hold one number");
    };
    if depth < 1.0 || depth.fract() != 0.0 || depth > f64::from(u32::MAX) {
        return invalid(format!("depth {depth} is not a positive integer"));
    }
    let depth = depth as u64;
    let ty = g.ty(&indices);
    let rank = ty.rank() + 1;
    let axis = axis_in(node.int("axis", -1), rank)?;
    let element = ty.element;
    let size = g.scalar(depth as f64, element);
    let zero = g.scalar(0.0, element);
    let negative = g.compare(&indices, &zero, "lt")?;
    let wrapped = g.binary("array.add", &indices, &size)?;
    let index = g.select(&negative, &wrapped, &indices)?;
    let mut spread_shape = ty.shape.clone();
    spread_shape.insert(axis, 1);
    let index = g.reshape(&index, spread_shape)?;
    let at = positions(g, depth, axis, rank, element);
    let hot = g.compare(&index, &at, "eq")?;
    let values_ty = g.ty(&values);
    if values_ty.num_elements() != Some(2) {
        return invalid(format!("values is {values_ty}, not [off, on]"));
    }
    let flat = g.reshape(&values, vec![2])?;
    let off = g.slice(&flat, &[0], &[1], &[1])?;
    let on = g.slice(&flat, &[1], &[2], &[1])?;
    let (off, on) = (g.reshape(&off, vec![])?, g.reshape(&on, vec![])?);
    Ok(vec![g.select(&hot, &on, &off)?])
}

/// `EyeLike(input)`: ones on the diagonal shifted by `k`, zeros elsewhere, of the input's
/// shape and of type `dtype` (else the input's).
pub fn eye_like(g: &mut Graph, node: &Node, inputs: &Inputs) -> NodeResult<Vec<Val>> {
    let ty = g.ty(&input(inputs, 0)?);
    if ty.rank() != 2 {
        return invalid(format!("its input is {ty}, not 2-d"));
    }
    let element = match node.attr("dtype") {
        Some(a) => element_type(a.i as i32)
            .map_err(|e| crate::graph::NodeError::Unsupported(format!("dtype {e}")))?,
        None => ty.element,
    };
    let k = node.int("k", 0);
    let (rows, cols) = (ty.shape[0], ty.shape[1]);
    let values = (0..rows as i64)
        .flat_map(|i| (0..cols as i64).map(move |j| f64::from(u8::from(j - i == k))));
    Ok(vec![g.constant(Tensor::from_numbers(
        &TensorType::new(ty.shape.clone(), element),
        values,
    ))])
}

/// `Hardmax`: 1 at the first maximum along `axis`, 0 elsewhere (before opset 13, over the
/// axes from `axis` on, flattened).
pub fn hardmax(g: &mut Graph, node: &Node, inputs: &Inputs) -> NodeResult<Vec<Val>> {
    let x = input(inputs, 0)?;
    let ty = g.ty(&x);
    let rank = ty.rank();
    let axis = axis_in(node.int("axis", if node.opset < 13 { 1 } else { -1 }), rank)?;
    let (x, axis) = if node.opset < 13 && axis != rank - 1 {
        let (outer, inner) = ty.shape.split_at(axis);
        let flat = vec![outer.iter().product(), inner.iter().product()];
        (g.reshape(&x, flat)?, 1)
    } else {
        (x, axis)
    };
    let flat_ty = g.ty(&x);
    let first = g.op(
        "array.argmax",
        std::slice::from_ref(&x),
        &[("axis", Attribute::Int(axis as i64))],
        None,
    )?;
    let mut kept = flat_ty.shape.clone();
    kept[axis] = 1;
    let first = g.reshape(&first, kept)?;
    let at = positions(
        g,
        flat_ty.shape[axis],
        axis,
        flat_ty.rank(),
        g.ty(&first).element,
    );
    let hot = g.compare(&first, &at, "eq")?;
    let y = g.cast(&hot, ty.element)?;
    Ok(vec![g.reshape(&y, ty.shape)?])
}
