//! `CenterCropPad`: each listed axis cropped or zero-padded to its new size around its centre
//! (the odd element, if any, taken from or added at the end).

use super::{axis_in, input, Inputs};
use crate::graph::{invalid, Graph, NodeResult, Val};
use crate::node::Node;
use tessera::attr::Attribute;

/// `CenterCropPad(input, shape)`, on `axes` (default all).
pub fn center_crop_pad(g: &mut Graph, node: &Node, inputs: &Inputs) -> NodeResult<Vec<Val>> {
    let x = input(inputs, 0)?;
    let sizes = g.ints(&input(inputs, 1)?, "the shape input")?;
    let ty = g.ty(&x);
    let rank = ty.rank();
    let axes = match node.ints("axes") {
        Some(axes) => axes
            .into_iter()
            .map(|a| axis_in(a, rank))
            .collect::<NodeResult<Vec<_>>>()?,
        None => (0..rank).collect(),
    };
    if axes.len() != sizes.len() {
        return invalid(format!("{} sizes for {} axes", sizes.len(), axes.len()));
    }
    let (mut start, mut limit) = (vec![0; rank], ty.shape.clone());
    let (mut low, mut high) = (vec![0i64; rank], vec![0i64; rank]);
    for (&axis, &size) in axes.iter().zip(&sizes) {
        if size < 0 {
            return invalid(format!("size {size} for axis {axis} is negative"));
        }
        let (dim, size) = (ty.shape[axis], size as u64);
        if size < dim {
            start[axis] = (dim - size) / 2;
            limit[axis] = start[axis] + size;
        } else {
            low[axis] = ((size - dim) / 2) as i64;
            high[axis] = (size - dim) as i64 - low[axis];
        }
    }
    let cropped = g.slice(&x, &start, &limit, &vec![1; rank])?;
    if low.iter().chain(&high).all(|&p| p == 0) {
        return Ok(vec![cropped]);
    }
    let list = |v: &[i64]| Attribute::List(v.iter().map(|&p| Attribute::Int(p)).collect());
    Ok(vec![g.op(
        "array.pad",
        &[cropped],
        &[("low", list(&low)), ("high", list(&high))],
        None,
    )?])
}
