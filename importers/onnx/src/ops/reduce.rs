//! Reductions: `ReduceSum`, `ReduceMean`, `ReduceMax`, `ReduceMin`, `ReduceL2` (axes an
//! attribute or, from opset 18 — 13 for `ReduceSum` — an input; `keepdims` default 1;
//! `noop_with_empty_axes`), and `ArgMax`.

use super::shape::axes_of;
use super::{axis_in, input, Inputs};
use crate::graph::{invalid, unsupported, Graph, NodeResult, Val};
use crate::node::Node;
use tessera::attr::Attribute;

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
    let y = match op {
        "ReduceSum" => g.reduce("array.reduce_sum", &x, &axes, keepdims)?,
        "ReduceMean" => g.reduce("array.reduce_mean", &x, &axes, keepdims)?,
        "ReduceMax" => g.reduce("array.reduce_max", &x, &axes, keepdims)?,
        "ReduceMin" => g.reduce("array.reduce_min", &x, &axes, keepdims)?,
        "ReduceL2" => {
            let squares = g.binary("array.mul", &x, &x)?;
            let sum = g.reduce("array.reduce_sum", &squares, &axes, keepdims)?;
            if !ty.element.is_float() {
                return unsupported("ReduceL2 of integers");
            }
            g.unary("array.sqrt", &sum)?
        }
        _ => return unsupported(format!("{op} (tessera has no product reduction yet)")),
    };
    Ok(vec![y])
}

/// `ArgMax` along `axis`, the first maximum; `keepdims` keeps the axis as size 1.
pub fn argmax(g: &mut Graph, node: &Node, inputs: &Inputs) -> NodeResult<Vec<Val>> {
    if node.int("select_last_index", 0) != 0 {
        return unsupported("ArgMax with select_last_index (tessera returns the first maximum)");
    }
    let x = input(inputs, 0)?;
    let ty = g.ty(&x);
    if ty.rank() == 0 {
        return invalid("ArgMax of a scalar");
    }
    let axis = axis_in(node.int("axis", 0), ty.rank())?;
    let y = g.op(
        "array.argmax",
        &[x],
        &[("axis", Attribute::Int(axis as i64))],
        None,
    )?;
    if node.int("keepdims", 1) == 0 {
        return Ok(vec![y]);
    }
    let mut shape = ty.shape.clone();
    shape[axis] = 1;
    Ok(vec![g.reshape(&y, shape)?])
}
