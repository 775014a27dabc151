//! `TopK`: the `k` largest (or smallest) elements along an axis, sorted, with their indices;
//! ties go to the lower index. Each element's rank is counted (how many elements come before
//! it in that order: a comparison of every pair, quadratic in the axis' length), then the
//! element of each rank up to `k` is picked.

use super::{axis_in, input, Inputs};
use crate::graph::{invalid, Graph, NodeResult, Val};
use crate::node::Node;
use tessera::attr::{Attribute, Scalar};
use tessera::exec::tensor::Tensor;
use tessera::types::{ElementType, TensorType};

/// `TopK(X, K)` (before opset 10, `k` an attribute): values and `i64` indices.
pub fn top_k(g: &mut Graph, node: &Node, inputs: &Inputs) -> NodeResult<Vec<Val>> {
    let x = input(inputs, 0)?;
    let k = if node.opset < 10 {
        node.int("k", 0)
    } else {
        match g.ints(&input(inputs, 1)?, "the k input")?[..] {
            [k] => k,
            _ => return invalid("the k input must hold one integer"),
        }
    };
    let ty = g.ty(&x);
    if ty.rank() == 0 {
        return invalid("TopK of a scalar");
    }
    let rank = ty.rank();
    let axis = axis_in(node.int("axis", -1), rank)?;
    let n = ty.shape[axis];
    if k < 0 || k as u64 > n {
        return invalid(format!(
            "k = {k} is outside [0, {n}] for axis {axis} of {ty}"
        ));
    }
    let k = k as u64;
    // The axis last: [M..., n].
    let mut perm: Vec<i64> = (0..rank as i64).filter(|&d| d != axis as i64).collect();
    perm.push(axis as i64);
    let xt = g.transpose(&x, &perm)?;
    let moved = g.ty(&xt).shape;
    let outer = &moved[..rank - 1];
    let with = |tail: &[u64]| [outer, tail].concat();
    // rank[i] = #{j : x_j beats x_i, or ties with it from a lower index}.
    let xi = g.reshape(&xt, with(&[n, 1]))?;
    let xj = g.reshape(&xt, with(&[1, n]))?;
    let order = if node.int("largest", 1) != 0 {
        "gt"
    } else {
        "lt"
    };
    let beats = g.compare(&xj, &xi, order)?;
    let ties = g.compare(&xj, &xi, "eq")?;
    let lower = g.constant(Tensor::from_numbers(
        &TensorType::new(vec![n, n], ElementType::I1),
        (0..n).flat_map(|i| (0..n).map(move |j| f64::from(u8::from(j < i)))),
    ));
    let no = g.splat(
        Scalar::Bool(false),
        TensorType::new(vec![], ElementType::I1),
    );
    let tie_first = g.select(&ties, &lower, &no)?;
    let yes = g.splat(Scalar::Bool(true), TensorType::new(vec![], ElementType::I1));
    let before = g.select(&beats, &yes, &tie_first)?;
    let before = g.cast(&before, ElementType::I64)?;
    let last = rank as i64;
    let ranks = g.reduce("array.reduce_sum", &before, &[last], false)?;
    // index[t] = the j whose rank is t.
    let ranks = g.reshape(&ranks, with(&[1, n]))?;
    let wanted = g.constant(Tensor::from_numbers(
        &TensorType::new(vec![k, 1], ElementType::I64),
        (0..k).map(|t| t as f64),
    ));
    let hit = g.compare(&ranks, &wanted, "eq")?;
    let positions = g.constant(Tensor::from_numbers(
        &TensorType::new(vec![n], ElementType::I64),
        (0..n).map(|j| j as f64),
    ));
    let zero = g.scalar(0.0, ElementType::I64);
    let picked = g.select(&hit, &positions, &zero)?;
    let indices = g.reduce("array.reduce_sum", &picked, &[last], false)?;
    let values = g.op(
        "array.take_along",
        &[xt, indices.clone()],
        &[("axis", Attribute::Int(last - 1))],
        None,
    )?;
    // The axis back in place.
    let mut inverse = vec![0i64; rank];
    for (position, &d) in perm.iter().enumerate() {
        inverse[d as usize] = position as i64;
    }
    Ok(vec![
        g.transpose(&values, &inverse)?,
        g.transpose(&indices, &inverse)?,
    ])
}
