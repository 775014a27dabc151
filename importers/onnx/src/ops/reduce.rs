//! Reductions: `ReduceSum`, `ReduceMean`, `ReduceMax`, `ReduceMin`, `ReduceL1`, `ReduceL2`,
//! `ReduceSumSquare`, `ReduceLogSum`, `ReduceLogSumExp`, `ReduceProd` (axes an attribute or, from opset
//! 18 — 13 for `ReduceSum` — an input; `keepdims` default 1; `noop_with_empty_axes`), and
//! `ArgMax`/`ArgMin`.

use super::shape::axes_of;
use super::{axis_in, input, Inputs};
use crate::graph::{invalid, unsupported, Graph, NodeResult, Val};
use crate::node::Node;
use tessera::attr::Attribute;
use tessera::types::ElementType;

/// The `Reduce*` ops.
pub fn reduce(g: &mut Graph, node: &Node, inputs: &Inputs) -> NodeResult<Vec<Val>> {
    let op = node.proto.op_type.as_str();
    let x = input(inputs, 0)?;
    let ty = g.ty(&x);
    let input_from = if op == "ReduceSum" { 13 } else { 18 };
    let axes = match axes_of(g, node, inputs, input_from)? {
        Some(axes) if !axes.is_empty() => axes
            .iter()
            .map(|&a| axis_in(a, ty.rank()).map(|a| a as i64))
            .collect::<NodeResult<Vec<_>>>()?,
        _ if node.int("noop_with_empty_axes", 0) != 0 => return Ok(vec![x]),
        _ => (0..ty.rank() as i64).collect(),
    };
    let keepdims = node.int("keepdims", 1) != 0;
    if matches!(op, "ReduceMax" | "ReduceMin") && ty.element == ElementType::I1 {
        // On booleans: any (max) and all (min), through i8.
        let wide = g.cast(&x, ElementType::I8)?;
        let name = if op == "ReduceMax" {
            "array.reduce_max"
        } else {
            "array.reduce_min"
        };
        let reduced = g.reduce(name, &wide, &axes, keepdims)?;
        // Over no elements the i8 reduction is -128 (max) or 127 (min): false and true.
        let zero = g.scalar(0.0, ElementType::I8);
        return Ok(vec![g.compare(&reduced, &zero, "gt")?]);
    }
    let y = match op {
        "ReduceSum" => g.reduce("array.reduce_sum", &x, &axes, keepdims)?,
        "ReduceMean" => g.reduce("array.reduce_mean", &x, &axes, keepdims)?,
        "ReduceMax" => g.reduce("array.reduce_max", &x, &axes, keepdims)?,
        "ReduceMin" => g.reduce("array.reduce_min", &x, &axes, keepdims)?,
        "ReduceL1" => {
            let magnitudes = g.unary("array.abs", &x)?;
            g.reduce("array.reduce_sum", &magnitudes, &axes, keepdims)?
        }
        "ReduceSumSquare" => {
            let squares = g.binary("array.mul", &x, &x)?;
            g.reduce("array.reduce_sum", &squares, &axes, keepdims)?
        }
        "ReduceL2" if ty.element.is_float() => {
            let squares = g.binary("array.mul", &x, &x)?;
            let sum = g.reduce("array.reduce_sum", &squares, &axes, keepdims)?;
            g.unary("array.sqrt", &sum)?
        }
        "ReduceLogSum" if ty.element.is_float() => {
            let sum = g.reduce("array.reduce_sum", &x, &axes, keepdims)?;
            g.unary("array.log", &sum)?
        }
        "ReduceLogSumExp" if ty.element.is_float() => {
            // log(sum(e^(x - m))) + m with m the maximum (finite), so large inputs do not
            // overflow.
            let m = g.reduce("array.reduce_max", &x, &axes, true)?;
            let zero = g.scalar(0.0, ty.element);
            let finite = g.compare(&m, &m, "eq")?;
            let infinite = g.unary("array.abs", &m)?;
            let inf = g.scalar(f64::INFINITY, ty.element);
            let is_inf = g.compare(&infinite, &inf, "eq")?;
            let shift_ok = g.select(&is_inf, &zero, &m)?;
            let shift = g.select(&finite, &shift_ok, &zero)?;
            let shifted = g.binary("array.sub", &x, &shift)?;
            let e = g.unary("array.exp", &shifted)?;
            let sum = g.reduce("array.reduce_sum", &e, &axes, keepdims)?;
            let log = g.unary("array.log", &sum)?;
            let shift = if keepdims {
                shift
            } else {
                g.reshape(&shift, g.ty(&log).shape)?
            };
            g.binary("array.add", &log, &shift)?
        }
        "ReduceProd" => g.reduce("array.reduce_prod", &x, &axes, keepdims)?,
        _ => return unsupported(format!("{op} of {}", ty.element)),
    };
    Ok(vec![y])
}

/// `ArgMax` and `ArgMin` (the maximum of `-x`, or of `-1 - x` for integers, which cannot
/// overflow) along `axis`, the first one; `keepdims` keeps the axis as size 1.
pub fn argmax(g: &mut Graph, node: &Node, inputs: &Inputs) -> NodeResult<Vec<Val>> {
    let mut x = input(inputs, 0)?;
    let ty = g.ty(&x);
    if node.proto.op_type == "ArgMin" {
        x = if ty.element.is_float() {
            g.unary("array.neg", &x)?
        } else if ty.element == ElementType::I1 {
            let f = g.scalar(0.0, ElementType::I1);
            g.compare(&x, &f, "eq")?
        } else {
            let minus_one = g.scalar(-1.0, ty.element);
            g.binary("array.sub", &minus_one, &x)?
        };
    }
    if ty.rank() == 0 {
        return invalid("ArgMax of a scalar");
    }
    let axis = axis_in(node.int("axis", 0), ty.rank())?;
    // The last extremum is the first one of the axis walked backwards.
    let last = node.int("select_last_index", 0) != 0;
    let n = ty.shape[axis] as i64;
    if last {
        let backwards: Vec<i64> = (0..n).rev().collect();
        x = super::shape::pick(g, &x, axis, &backwards)?;
    }
    let mut y = g.op(
        "array.argmax",
        &[x],
        &[("axis", Attribute::Int(axis as i64))],
        None,
    )?;
    if last {
        let end = g.scalar((n - 1) as f64, g.ty(&y).element);
        y = g.binary("array.sub", &end, &y)?;
    }
    if node.int("keepdims", 1) == 0 {
        return Ok(vec![y]);
    }
    let mut shape = ty.shape.clone();
    shape[axis] = 1;
    Ok(vec![g.reshape(&y, shape)?])
}
