//! `CumSum` and `CumProd`: each output element the sum (product) of the inputs up to it along
//! an axis (before it when `exclusive`, from the end when `reverse`), as a reduction over a
//! triangle: the input repeated along a new axis, the elements past each position replaced by
//! the identity, then reduced. Exact in integers; quadratic in the axis' length.

use super::{axis_in, input, Inputs};
use crate::graph::{invalid, Graph, NodeResult, Val};
use crate::node::Node;
use tessera::exec::tensor::Tensor;
use tessera::types::{ElementType, TensorType};

/// `CumSum(x, axis)` and `CumProd(x, axis)`.
pub fn cumulative(g: &mut Graph, node: &Node, inputs: &Inputs) -> NodeResult<Vec<Val>> {
    let x = input(inputs, 0)?;
    let axis = g.ints(&input(inputs, 1)?, "the axis input")?;
    let [axis] = axis[..] else {
        return invalid("the axis input must hold one integer");
    };
    let ty = g.ty(&x);
    let rank = ty.rank();
    let axis = axis_in(axis, rank)?;
    let (exclusive, reverse) = (node.int("exclusive", 0) != 0, node.int("reverse", 0) != 0);
    let product = node.proto.op_type == "CumProd";
    let n = ty.shape[axis];
    // included[i][j]: whether input j counts toward output i.
    let included = |i: u64, j: u64| match (reverse, exclusive) {
        (false, false) => j <= i,
        (false, true) => j < i,
        (true, false) => j >= i,
        (true, true) => j > i,
    };
    // x as [..., 1 (outputs i), n (inputs j), ...], against a mask [n, n] at those axes.
    let mut spread = ty.shape.clone();
    spread.insert(axis, 1);
    let xs = g.reshape(&x, spread)?;
    let mut mask_shape = vec![1; rank + 1];
    mask_shape[axis] = n;
    mask_shape[axis + 1] = n;
    let mask = g.constant(Tensor::from_numbers(
        &TensorType::new(mask_shape, ElementType::I1),
        (0..n).flat_map(|i| (0..n).map(move |j| f64::from(u8::from(included(i, j))))),
    ));
    let identity = g.scalar(if product { 1.0 } else { 0.0 }, ty.element);
    let terms = g.select(&mask, &xs, &identity)?;
    let mut full = ty.shape.clone();
    full.insert(axis, n);
    let terms = g.broadcast(&terms, full)?;
    let reduction = if product {
        "array.reduce_prod"
    } else {
        "array.reduce_sum"
    };
    let y = g.reduce(reduction, &terms, &[axis as i64 + 1], false)?;
    Ok(vec![y])
}
