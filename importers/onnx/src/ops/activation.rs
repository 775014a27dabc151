//! Activation ONNX ops without a tessera op of their own, as formulas of `array` ops:
//! `Softsign`, `Softplus`, `Selu`, `Celu`, `ThresholdedRelu`, `Shrink`, `PRelu`, `Mish`,
//! `Swish`, `SwiGLU`.

use super::{input, Inputs};
use crate::graph::{Graph, NodeResult, Val};
use crate::node::Node;

/// `log(1 + e^x)`, stably: `max(x, 0) + log(1 + e^-|x|)`.
fn softplus_of(g: &mut Graph, x: &Val) -> NodeResult<Val> {
    let element = g.ty(x).element;
    let (zero, one) = (g.scalar(0.0, element), g.scalar(1.0, element));
    let positive = g.binary("array.max", x, &zero)?;
    let magnitude = g.unary("array.abs", x)?;
    let minus = g.unary("array.neg", &magnitude)?;
    let e = g.unary("array.exp", &minus)?;
    let sum = g.binary("array.add", &one, &e)?;
    let log = g.unary("array.log", &sum)?;
    g.binary("array.add", &positive, &log)
}

/// `x < 0 ? scale (e^x - 1) : x` with `scale` a scalar.
fn exponential_below_zero(g: &mut Graph, x: &Val, scale: f64) -> NodeResult<Val> {
    let element = g.ty(x).element;
    let (zero, one, k) = (
        g.scalar(0.0, element),
        g.scalar(1.0, element),
        g.scalar(scale, element),
    );
    let e = g.unary("array.exp", x)?;
    let em1 = g.binary("array.sub", &e, &one)?;
    let scaled = g.binary("array.mul", &k, &em1)?;
    let negative = g.compare(x, &zero, "lt")?;
    g.select(&negative, &scaled, x)
}

/// The activations of this family, by op type.
pub fn activation(g: &mut Graph, node: &Node, inputs: &Inputs) -> NodeResult<Vec<Val>> {
    let x = input(inputs, 0)?;
    let element = g.ty(&x).element;
    let y = match node.proto.op_type.as_str() {
        "Softsign" => {
            let one = g.scalar(1.0, element);
            let magnitude = g.unary("array.abs", &x)?;
            let denominator = g.binary("array.add", &one, &magnitude)?;
            g.binary("array.div", &x, &denominator)?
        }
        "Softplus" => softplus_of(g, &x)?,
        "Selu" => {
            let alpha = node.float("alpha", 1.673_263_2);
            let gamma = node.float("gamma", 1.050_701);
            let elu = exponential_below_zero(g, &x, alpha)?;
            let k = g.scalar(gamma, element);
            g.binary("array.mul", &k, &elu)?
        }
        "Celu" => {
            // max(0, x) + min(0, alpha (e^(x / alpha) - 1)): the same as
            // x < 0 ? alpha (e^(x / alpha) - 1) : x.
            let alpha = node.float("alpha", 1.0);
            let a = g.scalar(alpha, element);
            let scaled = g.binary("array.div", &x, &a)?;
            let elu = exponential_below_zero(g, &scaled, alpha)?;
            let zero = g.scalar(0.0, element);
            let negative = g.compare(&x, &zero, "lt")?;
            g.select(&negative, &elu, &x)?
        }
        "ThresholdedRelu" => {
            let alpha = g.scalar(node.float("alpha", 1.0), element);
            let zero = g.scalar(0.0, element);
            let above = g.compare(&x, &alpha, "gt")?;
            g.select(&above, &x, &zero)?
        }
        "Shrink" => {
            let lambd = node.float("lambd", 0.5);
            let bias = g.scalar(node.float("bias", 0.0), element);
            let (low, high) = (g.scalar(-lambd, element), g.scalar(lambd, element));
            let zero = g.scalar(0.0, element);
            let below = g.compare(&x, &low, "lt")?;
            let above = g.compare(&x, &high, "gt")?;
            let raised = g.binary("array.add", &x, &bias)?;
            let lowered = g.binary("array.sub", &x, &bias)?;
            let outer = g.select(&above, &lowered, &zero)?;
            g.select(&below, &raised, &outer)?
        }
        "PRelu" => {
            let slope = input(inputs, 1)?;
            let zero = g.scalar(0.0, element);
            let negative = g.compare(&x, &zero, "lt")?;
            let scaled = g.binary("array.mul", &slope, &x)?;
            let y = g.select(&negative, &scaled, &x)?;
            // The slope broadcasts to x's shape, never beyond it.
            g.broadcast(&y, g.ty(&x).shape)?
        }
        "Mish" => {
            let soft = softplus_of(g, &x)?;
            let t = g.unary("array.tanh", &soft)?;
            g.binary("array.mul", &x, &t)?
        }
        _ => {
            // Swish: x sigmoid(alpha x).
            let alpha = g.scalar(node.float("alpha", 1.0), element);
            let ax = g.binary("array.mul", &alpha, &x)?;
            let s = g.unary("nn.sigmoid", &ax)?;
            g.binary("array.mul", &x, &s)?
        }
    };
    Ok(vec![y])
}

/// `SwiGLU(A, B)`: `A sigmoid(alpha A) B`.
pub fn swiglu(g: &mut Graph, node: &Node, inputs: &Inputs) -> NodeResult<Vec<Val>> {
    let (a, b) = (input(inputs, 0)?, input(inputs, 1)?);
    let alpha = g.scalar(node.float("alpha", 1.0), g.ty(&a).element);
    let scaled = g.binary("array.mul", &alpha, &a)?;
    let gate = g.unary("nn.sigmoid", &scaled)?;
    let swish = g.binary("array.mul", &a, &gate)?;
    Ok(vec![g.binary("array.mul", &swish, &b)?])
}
