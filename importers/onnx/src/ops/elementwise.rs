//! Elementwise ONNX ops: arithmetic, comparisons and logic (numpy broadcasting, as tessera's
//! `array` ops), activations, `Clip`, `Cast`, `Softmax`/`LogSoftmax`, and the ops that pass
//! their input through at inference (`Identity`, `Dropout`).

use super::{input, Inputs};
use crate::graph::{invalid, unsupported, Graph, NodeResult, Val};
use crate::node::Node;
use crate::tensor::element_type;
use tessera::attr::Attribute;
use tessera::minifloat::{MiniFloat, Specials};
use tessera::types::{ElementClass, ElementType};

/// `Add`, `Sub`, `Mul`, `Div`: the `array` op of the same name.
pub fn arithmetic(g: &mut Graph, node: &Node, inputs: &Inputs) -> NodeResult<Vec<Val>> {
    let name = match node.proto.op_type.as_str() {
        "Add" => "array.add",
        "Sub" => "array.sub",
        "Mul" => "array.mul",
        _ => "array.div",
    };
    Ok(vec![g.binary(
        name,
        &input(inputs, 0)?,
        &input(inputs, 1)?,
    )?])
}

/// `Pow`: an exponent of another type is converted to the base's. Integer powers are taken
/// in f64 and converted back: exact while the power's magnitude is below 2^53.
pub fn pow(g: &mut Graph, _: &Node, inputs: &Inputs) -> NodeResult<Vec<Val>> {
    let base = input(inputs, 0)?;
    let element = g.ty(&base).element;
    if element.is_float() {
        let exponent = g.cast(&input(inputs, 1)?, element)?;
        return Ok(vec![g.binary("array.pow", &base, &exponent)?]);
    }
    if element.class() != ElementClass::Int {
        return invalid(format!("Pow of {element}"));
    }
    let wide_base = g.cast(&base, ElementType::F64)?;
    let exponent = g.cast(&input(inputs, 1)?, ElementType::F64)?;
    let power = g.binary("array.pow", &wide_base, &exponent)?;
    Ok(vec![g.cast(&power, element)?])
}

/// `Mod`: the remainder with the divisor's sign (Python's `%`), or with `fmod` the dividend's
/// (C's `fmod`, `array.rem`).
pub fn modulo(g: &mut Graph, node: &Node, inputs: &Inputs) -> NodeResult<Vec<Val>> {
    let (a, b) = (input(inputs, 0)?, input(inputs, 1)?);
    let r = g.binary("array.rem", &a, &b)?;
    if node.int("fmod", 0) != 0 {
        return Ok(vec![r]);
    }
    let zero = g.scalar(0.0, g.ty(&r).element);
    let nonzero = g.compare(&r, &zero, "ne")?;
    let r_negative = g.compare(&r, &zero, "lt")?;
    let b_negative = g.compare(&b, &zero, "lt")?;
    let signs_differ = g.compare(&r_negative, &b_negative, "ne")?;
    let no = g.scalar(0.0, ElementType::I1);
    let adjust = g.select(&nonzero, &signs_differ, &no)?;
    let shifted = g.binary("array.add", &r, &b)?;
    Ok(vec![g.select(&adjust, &shifted, &r)?])
}

/// `Min`, `Max`, `Sum`, `Mean`: folded over any number of inputs.
pub fn variadic(g: &mut Graph, node: &Node, inputs: &Inputs) -> NodeResult<Vec<Val>> {
    let op = node.proto.op_type.as_str();
    let name = match op {
        "Min" => "array.min",
        "Max" => "array.max",
        _ => "array.add",
    };
    let values: Vec<Val> = inputs.iter().flatten().cloned().collect();
    let Some((first, rest)) = values.split_first() else {
        return invalid("it has no inputs");
    };
    let mut acc = first.clone();
    for v in rest {
        acc = g.binary(name, &acc, v)?;
    }
    if op == "Mean" {
        let count = g.scalar(values.len() as f64, g.ty(&acc).element);
        acc = g.binary("array.div", &acc, &count)?;
    }
    Ok(vec![acc])
}

/// `Equal`, `Less`, `Greater`, `LessOrEqual`, `GreaterOrEqual`.
pub fn comparison(g: &mut Graph, node: &Node, inputs: &Inputs) -> NodeResult<Vec<Val>> {
    let predicate = match node.proto.op_type.as_str() {
        "Equal" => "eq",
        "Less" => "lt",
        "Greater" => "gt",
        "LessOrEqual" => "le",
        _ => "ge",
    };
    Ok(vec![g.compare(
        &input(inputs, 0)?,
        &input(inputs, 1)?,
        predicate,
    )?])
}

/// `Not`, `And`, `Or`, `Xor` on booleans, and `BitwiseNot`, `BitwiseAnd`, `BitwiseOr`,
/// `BitwiseXor` on integers: `array.and`, `array.or`, `array.xor` (not: xor with all ones).
pub fn logic(g: &mut Graph, node: &Node, inputs: &Inputs) -> NodeResult<Vec<Val>> {
    let a = input(inputs, 0)?;
    let op = node.proto.op_type.trim_start_matches("Bitwise");
    let y = match op {
        "Not" => {
            let element = g.ty(&a).element;
            let ones = g.scalar(-1.0, element);
            g.binary("array.xor", &a, &ones)?
        }
        "And" => g.binary("array.and", &a, &input(inputs, 1)?)?,
        "Or" => g.binary("array.or", &a, &input(inputs, 1)?)?,
        _ => g.binary("array.xor", &a, &input(inputs, 1)?)?,
    };
    Ok(vec![y])
}

/// `BitShift`: `array.shift_left` or `array.shift_right` as `direction` says.
pub fn bit_shift(g: &mut Graph, node: &Node, inputs: &Inputs) -> NodeResult<Vec<Val>> {
    let name = match node.string("direction", "").as_str() {
        "LEFT" => "array.shift_left",
        "RIGHT" => "array.shift_right",
        other => return invalid(format!("direction is '{other}', not 'LEFT' or 'RIGHT'")),
    };
    Ok(vec![g.binary(
        name,
        &input(inputs, 0)?,
        &input(inputs, 1)?,
    )?])
}

/// `Where`: `cond ? x : y`.
pub fn where_(g: &mut Graph, _: &Node, inputs: &Inputs) -> NodeResult<Vec<Val>> {
    let (c, a, b) = (input(inputs, 0)?, input(inputs, 1)?, input(inputs, 2)?);
    Ok(vec![g.select(&c, &a, &b)?])
}

/// Unary math with a direct `array` or `nn` op.
pub fn unary(g: &mut Graph, node: &Node, inputs: &Inputs) -> NodeResult<Vec<Val>> {
    let x = input(inputs, 0)?;
    let name = match node.proto.op_type.as_str() {
        "Neg" => "array.neg",
        "Abs" => "array.abs",
        "Exp" => "array.exp",
        "Log" => "array.log",
        "Sqrt" => "array.sqrt",
        "Erf" => "array.erf",
        "Tanh" => "array.tanh",
        "Floor" => "array.floor",
        "Ceil" => "array.ceil",
        "Sin" => "array.sin",
        "Cos" => "array.cos",
        "Tan" => "array.tan",
        "Asin" => "array.asin",
        "Acos" => "array.acos",
        "Atan" => "array.atan",
        "Sinh" => "array.sinh",
        "Cosh" => "array.cosh",
        "Asinh" => "array.asinh",
        "Acosh" => "array.acosh",
        "Atanh" => "array.atanh",
        "Sigmoid" => "nn.sigmoid",
        "Relu" => "nn.relu",
        _ => {
            // Reciprocal.
            let one = g.scalar(1.0, g.ty(&x).element);
            return Ok(vec![g.binary("array.div", &one, &x)?]);
        }
    };
    Ok(vec![g.unary(name, &x)?])
}

/// `LeakyRelu` (`x < 0 ? alpha x : x`) and `Elu` (`x < 0 ? alpha (e^x - 1) : x`).
pub fn leaky(g: &mut Graph, node: &Node, inputs: &Inputs) -> NodeResult<Vec<Val>> {
    let x = input(inputs, 0)?;
    let element = g.ty(&x).element;
    let elu = node.proto.op_type == "Elu";
    let alpha = g.scalar(node.float("alpha", if elu { 1.0 } else { 0.01 }), element);
    let zero = g.scalar(0.0, element);
    let negative = g.compare(&x, &zero, "lt")?;
    let scaled = if elu {
        let one = g.scalar(1.0, element);
        let e = g.unary("array.exp", &x)?;
        let em1 = g.binary("array.sub", &e, &one)?;
        g.binary("array.mul", &alpha, &em1)?
    } else {
        g.binary("array.mul", &alpha, &x)?
    };
    Ok(vec![g.select(&negative, &scaled, &x)?])
}

/// `max(0, min(1, alpha x + beta))`.
fn hard_sigmoid_of(g: &mut Graph, x: &Val, alpha: f64, beta: f64) -> NodeResult<Val> {
    let element = g.ty(x).element;
    let (a, b) = (g.scalar(alpha, element), g.scalar(beta, element));
    let (zero, one) = (g.scalar(0.0, element), g.scalar(1.0, element));
    let ax = g.binary("array.mul", &a, x)?;
    let line = g.binary("array.add", &ax, &b)?;
    let capped = g.binary("array.min", &line, &one)?;
    g.binary("array.max", &capped, &zero)
}

/// `HardSigmoid` (alpha 0.2, beta 0.5) and `HardSwish` (`x · HardSigmoid(1/6, 1/2)`).
pub fn hard(g: &mut Graph, node: &Node, inputs: &Inputs) -> NodeResult<Vec<Val>> {
    let x = input(inputs, 0)?;
    if node.proto.op_type == "HardSwish" {
        let h = hard_sigmoid_of(g, &x, 1.0 / 6.0, 0.5)?;
        return Ok(vec![g.binary("array.mul", &x, &h)?]);
    }
    let (alpha, beta) = (node.float("alpha", 0.2), node.float("beta", 0.5));
    Ok(vec![hard_sigmoid_of(g, &x, alpha, beta)?])
}

/// `Gelu` (opset 20): `nn.gelu` with the same `approximate`.
pub fn gelu(g: &mut Graph, node: &Node, inputs: &Inputs) -> NodeResult<Vec<Val>> {
    let approximate = node.string("approximate", "none");
    if approximate != "none" && approximate != "tanh" {
        return invalid(format!(
            "approximate is '{approximate}', not 'none' or 'tanh'"
        ));
    }
    let x = input(inputs, 0)?;
    let attrs = [("approximate", Attribute::Str(approximate))];
    Ok(vec![g.op("nn.gelu", &[x], &attrs, None)?])
}

/// `Clip`: bounds from attributes (before opset 11) or optional inputs.
pub fn clip(g: &mut Graph, node: &Node, inputs: &Inputs) -> NodeResult<Vec<Val>> {
    let mut y = input(inputs, 0)?;
    let element = g.ty(&y).element;
    let (low, high) = if node.opset < 11 {
        let bound =
            |g: &Graph, name: &str| node.attr(name).map(|a| g.scalar(f64::from(a.f), element));
        (bound(g, "min"), bound(g, "max"))
    } else {
        (
            inputs.get(1).cloned().flatten(),
            inputs.get(2).cloned().flatten(),
        )
    };
    if let Some(low) = low {
        y = g.binary("array.max", &y, &low)?;
    }
    if let Some(high) = high {
        y = g.binary("array.min", &y, &high)?;
    }
    Ok(vec![y])
}

/// `Cast` to the element type `to` names, and `CastLike` to its second input's.
pub fn cast(g: &mut Graph, node: &Node, inputs: &Inputs) -> NodeResult<Vec<Val>> {
    let saturate = node.int("saturate", 1) != 0;
    let element = if node.proto.op_type == "CastLike" {
        g.ty(&input(inputs, 1)?).element
    } else {
        element_type(node.int("to", 0) as i32)
            .map_err(|e| crate::graph::NodeError::Unsupported(format!("the target type {e}")))?
    };
    let round_mode = node.string("round_mode", "up");
    if element == ElementType::F8E8M0FNU && round_mode != "up" {
        return unsupported(format!(
            "a cast to float8e8m0 with round_mode '{round_mode}' (tessera rounds up)"
        ));
    }
    Ok(vec![onnx_cast(g, &input(inputs, 0)?, element, saturate)?])
}

/// `x` cast to `to` as ONNX casts where it differs from `array.cast`: to an 8-bit float with
/// `saturate`, values beyond the type's largest become it (infinities too, NaN stays NaN);
/// from a float to a 4- or 2-bit integer, a value whose truncation lies outside the type
/// becomes 0 (as onnx's reference, through ml_dtypes, computes).
pub fn onnx_cast(g: &mut Graph, x: &Val, to: ElementType, saturate: bool) -> NodeResult<Val> {
    let from = g.ty(x).element;
    if from == to {
        return Ok(x.clone());
    }
    // Storage-only sources compute as f32 (which holds each of their values).
    let computable = |g: &mut Graph| -> NodeResult<Val> {
        if from.is_storage_only() || (!from.is_float() && to.is_float()) {
            g.cast(x, ElementType::F32)
        } else {
            Ok(x.clone())
        }
    };
    if to == ElementType::F8E8M0FNU {
        // As the reference: through f32; without saturate, past 2^127 is NaN.
        let mut source = computable(g)?;
        if g.ty(&source).element == ElementType::F64 {
            source = g.cast(&source, ElementType::F32)?;
        }
        if !saturate {
            let element = g.ty(&source).element;
            let magnitude = g.unary("array.abs", &source)?;
            let largest = g.scalar(2f64.powi(127), element);
            let beyond = g.compare(&magnitude, &largest, "gt")?;
            let nan = g.scalar(f64::NAN, element);
            source = g.select(&beyond, &nan, &source)?;
        }
        return g.cast(&source, to);
    }
    // f4E2M1FN saturates by itself.
    let clamps = |f: &MiniFloat| saturate && f.specials != Specials::Numbers;
    if let Some(format) = to.minifloat().filter(clamps) {
        let source = computable(g)?;
        let element = g.ty(&source).element;
        let max = format.decode(format.max_code());
        let (low, high) = (g.scalar(-max, element), g.scalar(max, element));
        let above = g.binary("array.max", &source, &low)?;
        let clamped = g.binary("array.min", &above, &high)?;
        return g.cast(&clamped, to);
    }
    if to.is_storage_only() && !to.is_float() && from.is_float() {
        let source = computable(g)?;
        let element = g.ty(&source).element;
        let (low, high) = to.int_bounds();
        let floor = g.scalar(low as f64 - 1.0, element);
        let ceiling = g.scalar(high as f64 + 1.0, element);
        let above = g.compare(&source, &floor, "gt")?;
        let below = g.compare(&source, &ceiling, "lt")?;
        let inside = g.binary("array.and", &above, &below)?;
        let zero = g.scalar(0.0, element);
        let kept = g.select(&inside, &source, &zero)?;
        return g.cast(&kept, to);
    }
    g.cast(x, to)
}

/// `Softmax` and `LogSoftmax`: along `axis` from opset 13; before, over the dimensions from
/// `axis` on, flattened (the input coerced to 2-d).
pub fn softmax(g: &mut Graph, node: &Node, inputs: &Inputs) -> NodeResult<Vec<Val>> {
    let x = input(inputs, 0)?;
    let ty = g.ty(&x);
    if ty.element.class() != ElementClass::Float {
        return invalid(format!("its input is {ty}, not a float tensor"));
    }
    let name = if node.proto.op_type == "Softmax" {
        "nn.softmax"
    } else {
        "nn.log_softmax"
    };
    let rank = ty.rank() as i64;
    let axis = node.int("axis", if node.opset < 13 { 1 } else { -1 });
    if axis < -rank || axis >= rank.max(1) {
        return invalid(format!("axis {axis} is out of range for {ty}"));
    }
    let axis = if axis < 0 { axis + rank } else { axis };
    if node.opset >= 13 || axis == rank - 1 {
        return Ok(vec![g.op(
            name,
            &[x],
            &[("axis", Attribute::Int(axis))],
            None,
        )?]);
    }
    let (outer, inner) = ty.shape.split_at(axis as usize);
    let flat = vec![outer.iter().product(), inner.iter().product()];
    let x2 = g.reshape(&x, flat)?;
    let y2 = g.op(name, &[x2], &[("axis", Attribute::Int(1))], None)?;
    Ok(vec![g.reshape(&y2, ty.shape.clone())?])
}
