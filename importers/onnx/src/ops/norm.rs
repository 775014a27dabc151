//! Normalization ONNX ops without a tessera op of their own, as `array` reductions and
//! elementwise ops: `RMSNormalization`, `GroupNormalization`, `MeanVarianceNormalization`,
//! `LpNormalization`.

use super::{axis_in, input, Inputs};
use crate::graph::{invalid, Graph, NodeResult, Val};
use crate::node::Node;
use tessera::types::{ElementClass, ElementType};

/// The element type statistics are kept in: f32 (`stash_type` 1, the default) or the input's.
fn stash(node: &Node, element: ElementType) -> ElementType {
    match node.int("stash_type", 1) {
        1 if element.is_float() => element.accumulator(),
        _ => element,
    }
}

/// A float input, or why not.
fn float_input(g: &Graph, inputs: &Inputs) -> NodeResult<Val> {
    let x = input(inputs, 0)?;
    let ty = g.ty(&x);
    if ty.element.class() != ElementClass::Float {
        return invalid(format!("its input is {ty}, not a float tensor"));
    }
    Ok(x)
}

/// `RMSNormalization(X, scale)`: `X / sqrt(mean(X^2) + epsilon) * scale` over the axes from
/// `axis` on.
pub fn rms_norm(g: &mut Graph, node: &Node, inputs: &Inputs) -> NodeResult<Vec<Val>> {
    let x = float_input(g, inputs)?;
    let ty = g.ty(&x);
    let rank = ty.rank();
    let axis = axis_in(node.int("axis", -1), rank)?;
    let wide = stash(node, ty.element);
    let xs = g.cast(&x, wide)?;
    let axes: Vec<i64> = (axis as i64..rank as i64).collect();
    let squares = g.binary("array.mul", &xs, &xs)?;
    let mean = g.reduce("array.reduce_mean", &squares, &axes, true)?;
    let eps = g.scalar(node.float("epsilon", 1e-5), wide);
    let shifted = g.binary("array.add", &mean, &eps)?;
    let inv = g.unary("array.rsqrt", &shifted)?;
    let normalized = g.binary("array.mul", &xs, &inv)?;
    let normalized = g.cast(&normalized, ty.element)?;
    let scale = input(inputs, 1)?;
    let y = g.binary("array.mul", &normalized, &scale)?;
    Ok(vec![g.broadcast(&y, ty.shape)?])
}

/// `(x - mean) * rsqrt(variance + epsilon)` over `axes` of `x` (in `x`'s type).
fn standardized(g: &mut Graph, x: &Val, axes: &[i64], epsilon: f64) -> NodeResult<Val> {
    let element = g.ty(x).element;
    let mean = g.reduce("array.reduce_mean", x, axes, true)?;
    let centered = g.binary("array.sub", x, &mean)?;
    let squares = g.binary("array.mul", &centered, &centered)?;
    let variance = g.reduce("array.reduce_mean", &squares, axes, true)?;
    let eps = g.scalar(epsilon, element);
    let shifted = g.binary("array.add", &variance, &eps)?;
    let inv = g.unary("array.rsqrt", &shifted)?;
    g.binary("array.mul", &centered, &inv)
}

/// `GroupNormalization(X, scale, bias)`: the channels of `[N, C, ...]` in `num_groups`
/// groups, each standardized over its channels and positions, then scaled and shifted per
/// channel (opset 18 gave one scale and bias per group).
pub fn group_norm(g: &mut Graph, node: &Node, inputs: &Inputs) -> NodeResult<Vec<Val>> {
    let x = float_input(g, inputs)?;
    let ty = g.ty(&x);
    if ty.rank() < 2 {
        return invalid(format!("its input is {ty}, not [N, C, ...]"));
    }
    let (n, c) = (ty.shape[0], ty.shape[1]);
    let groups = node.int("num_groups", 0);
    if groups <= 0 || c % groups as u64 != 0 {
        return invalid(format!("num_groups {groups} does not divide {c} channels"));
    }
    let groups = groups as u64;
    let rest: u64 = ty.shape[1..].iter().product();
    let wide = stash(node, ty.element);
    let xs = g.cast(&x, wide)?;
    let grouped = g.reshape(&xs, vec![n, groups, rest / groups])?;
    let standard = standardized(g, &grouped, &[2], node.float("epsilon", 1e-5))?;
    let standard = g.reshape(&standard, ty.shape.clone())?;
    let standard = g.cast(&standard, ty.element)?;
    let mut per_channel_shape = vec![c];
    per_channel_shape.extend(std::iter::repeat_n(1, ty.rank() - 2));
    let per_channel = |g: &mut Graph, v: Val| -> NodeResult<Val> {
        let v = if g.ty(&v).num_elements() == Some(groups) && groups != c {
            let spread = g.reshape(&v, vec![groups, 1])?;
            let repeated = g.broadcast(&spread, vec![groups, c / groups])?;
            g.reshape(&repeated, vec![c])?
        } else {
            v
        };
        g.reshape(&v, per_channel_shape.clone())
    };
    let scale = per_channel(g, input(inputs, 1)?)?;
    let bias = per_channel(g, input(inputs, 2)?)?;
    let scaled = g.binary("array.mul", &standard, &scale)?;
    Ok(vec![g.binary("array.add", &scaled, &bias)?])
}

/// `MeanVarianceNormalization`: `(x - mean) / (sqrt(mean(x^2) - mean^2) + 1e-9)` over `axes`
/// (default `[0, 2, 3]`), as onnx's function body computes it.
pub fn mean_variance_norm(g: &mut Graph, node: &Node, inputs: &Inputs) -> NodeResult<Vec<Val>> {
    let x = float_input(g, inputs)?;
    let rank = g.ty(&x).rank();
    let axes = node
        .ints("axes")
        .unwrap_or_else(|| vec![0, 2, 3])
        .into_iter()
        .map(|a| axis_in(a, rank).map(|a| a as i64))
        .collect::<NodeResult<Vec<_>>>()?;
    let element = g.ty(&x).element;
    let mean = g.reduce("array.reduce_mean", &x, &axes, true)?;
    let squares = g.binary("array.mul", &x, &x)?;
    let mean_of_squares = g.reduce("array.reduce_mean", &squares, &axes, true)?;
    let square_of_mean = g.binary("array.mul", &mean, &mean)?;
    let variance = g.binary("array.sub", &mean_of_squares, &square_of_mean)?;
    let deviation = g.unary("array.sqrt", &variance)?;
    let eps = g.scalar(1e-9, element);
    let denominator = g.binary("array.add", &deviation, &eps)?;
    let centered = g.binary("array.sub", &x, &mean)?;
    Ok(vec![g.binary("array.div", &centered, &denominator)?])
}

/// `LpNormalization`: `x / ||x||_p` along `axis` (`p` 1 or 2); 0 where the norm is 0.
pub fn lp_norm(g: &mut Graph, node: &Node, inputs: &Inputs) -> NodeResult<Vec<Val>> {
    let x = float_input(g, inputs)?;
    let rank = g.ty(&x).rank();
    let axis = axis_in(node.int("axis", -1), rank)? as i64;
    let element = g.ty(&x).element;
    let norm = match node.int("p", 2) {
        1 => {
            let magnitude = g.unary("array.abs", &x)?;
            g.reduce("array.reduce_sum", &magnitude, &[axis], true)?
        }
        2 => {
            let squares = g.binary("array.mul", &x, &x)?;
            let sum = g.reduce("array.reduce_sum", &squares, &[axis], true)?;
            g.unary("array.sqrt", &sum)?
        }
        p => return invalid(format!("p is {p}, not 1 or 2")),
    };
    let zero = g.scalar(0.0, element);
    let none = g.compare(&norm, &zero, "eq")?;
    let y = g.binary("array.div", &x, &norm)?;
    Ok(vec![g.select(&none, &zero, &y)?])
}
