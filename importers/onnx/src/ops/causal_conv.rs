//! `CausalConvWithState`: a depthwise 1-d convolution over time that sees only the past, its
//! left context the carried state (zeros when absent), with an optional SiLU; it also returns
//! the last `k - 1` steps as the next state. Each of the `k` taps is a slice of the padded
//! input times its per-channel weight.

use super::{input, Inputs};
use crate::graph::{invalid, Graph, NodeResult, Val};
use crate::node::Node;
use tessera::attr::{Attribute, Scalar};
use tessera::types::TensorType;

/// `CausalConvWithState(input [B, C, L], weight [C, 1, k], bias?, past_state?)`: `output`,
/// `present_state`.
pub fn causal_conv_with_state(g: &mut Graph, node: &Node, inputs: &Inputs) -> NodeResult<Vec<Val>> {
    let (x, w) = (input(inputs, 0)?, input(inputs, 1)?);
    let (ty, w_ty) = (g.ty(&x), g.ty(&w));
    if ty.rank() != 3 || w_ty.rank() != 3 || w_ty.shape[0] != ty.shape[1] || w_ty.shape[1] != 1 {
        return invalid(format!(
            "input {ty} and weight {w_ty} are not [B, C, L] and [C, 1, k]"
        ));
    }
    let (b, c, l, k) = (ty.shape[0], ty.shape[1], ty.shape[2], w_ty.shape[2]);
    if k == 0 {
        return invalid("the kernel is empty");
    }
    let past = match inputs.get(3).cloned().flatten() {
        Some(state) => state,
        None => g.splat(
            Scalar::Float(0.0),
            TensorType::new(vec![b, c, k - 1], ty.element),
        ),
    };
    let padded = g.op(
        "array.concat",
        &[past, x],
        &[("axis", Attribute::Int(2))],
        None,
    )?;
    let mut y: Option<Val> = None;
    for j in 0..k {
        let window = g.slice(&padded, &[0, 0, j], &[b, c, j + l], &[1, 1, 1])?;
        let tap = g.slice(&w, &[0, 0, j], &[c, 1, j + 1], &[1, 1, 1])?;
        let tap = g.reshape(&tap, vec![1, c, 1])?;
        let term = g.binary("array.mul", &window, &tap)?;
        y = Some(match y {
            Some(sum) => g.binary("array.add", &sum, &term)?,
            None => term,
        });
    }
    let mut y = y.expect("k > 0");
    if let Some(Some(bias)) = inputs.get(2) {
        let bias = g.reshape(bias, vec![1, c, 1])?;
        y = g.binary("array.add", &y, &bias)?;
    }
    match node.string("activation", "none").as_str() {
        "none" => {}
        "silu" | "swish" => {
            let gate = g.unary("nn.sigmoid", &y)?;
            y = g.binary("array.mul", &y, &gate)?;
        }
        other => return invalid(format!("activation '{other}' is not none, silu or swish")),
    }
    let present = g.slice(&padded, &[0, 0, l], &[b, c, l + k - 1], &[1, 1, 1])?;
    Ok(vec![y, present])
}
