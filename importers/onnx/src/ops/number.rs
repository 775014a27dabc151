//! ONNX ops on single numbers without a tessera op of their own: `Sign`, `Round` (half to
//! even), `IsNaN`, `IsInf`, as formulas of `array` ops.

use super::{input, Inputs};
use crate::graph::{invalid, Graph, NodeResult, Val};
use crate::node::Node;
use tessera::types::{ElementClass, ElementType};

/// `Sign`, `Round`, `IsNaN`, `IsInf`.
pub fn number(g: &mut Graph, node: &Node, inputs: &Inputs) -> NodeResult<Vec<Val>> {
    let x = input(inputs, 0)?;
    let element = g.ty(&x).element;
    let float = element.class() == ElementClass::Float;
    let op = node.proto.op_type.as_str();
    if !float && op != "Sign" {
        return invalid(format!("its input is {}, not a float tensor", g.ty(&x)));
    }
    let y = match op {
        "Sign" => {
            let (zero, one, minus_one) = (
                g.scalar(0.0, element),
                g.scalar(1.0, element),
                g.scalar(-1.0, element),
            );
            let positive = g.compare(&x, &zero, "gt")?;
            let negative = g.compare(&x, &zero, "lt")?;
            let low = g.select(&negative, &minus_one, &zero)?;
            let signed = g.select(&positive, &one, &low)?;
            if float {
                // NaN keeps its NaN.
                let nan = g.compare(&x, &x, "ne")?;
                g.select(&nan, &x, &signed)?
            } else {
                signed
            }
        }
        "Round" => round_half_even(g, &x)?,
        "IsNaN" => g.compare(&x, &x, "ne")?,
        _ => {
            // IsInf, each sign when asked.
            let (negative, positive) = (
                node.int("detect_negative", 1) != 0,
                node.int("detect_positive", 1) != 0,
            );
            let test = |g: &mut Graph, value: f64| {
                let bound = g.scalar(value, element);
                g.compare(&x, &bound, "eq")
            };
            let no = g.scalar(0.0, ElementType::I1);
            let high = if positive {
                test(g, f64::INFINITY)?
            } else {
                g.broadcast(&no, g.ty(&x).shape)?
            };
            if negative {
                let low = test(g, f64::NEG_INFINITY)?;
                g.select(&low, &low, &high)?
            } else {
                high
            }
        }
    };
    Ok(vec![y])
}

/// `x` rounded to the nearest integer, ties to the even one (as numpy's `round`).
pub(super) fn round_half_even(g: &mut Graph, x: &Val) -> NodeResult<Val> {
    let element = g.ty(x).element;
    let (half, one, two) = (
        g.scalar(0.5, element),
        g.scalar(1.0, element),
        g.scalar(2.0, element),
    );
    let down = g.unary("array.floor", x)?;
    let up = g.binary("array.add", &down, &one)?;
    let fraction = g.binary("array.sub", x, &down)?;
    let above = g.compare(&fraction, &half, "gt")?;
    let tie = g.compare(&fraction, &half, "eq")?;
    // down is even when down / 2 has no fraction.
    let halved = g.binary("array.div", &down, &two)?;
    let halved_down = g.unary("array.floor", &halved)?;
    let even = g.compare(&halved, &halved_down, "eq")?;
    let tie_value = g.select(&even, &down, &up)?;
    let nearest = g.select(&above, &up, &down)?;
    g.select(&tie, &tie_value, &nearest)
}
