//! Ops that move data or compute shapes: `Reshape`, `Flatten`, `Transpose`, `Squeeze`,
//! `Unsqueeze`, `Concat`, `Split`, `Slice`, `Gather`, `Expand`, `Tile`,
//! `Pad`, `Shape`, `Constant`, `ConstantOfShape`. Shapes are static, so
//! `Shape` is a constant and the chains built on it fold.

use super::{axis_in, input, Inputs, Items};
use crate::graph::{invalid, unsupported, Graph, NodeError, NodeResult, Val};
use crate::item::Item;
use crate::node::Node;
use crate::nodes::{Failure, NodeConverter, Scope};
use crate::tensor::{is_strings, strings_of, tensor_of};
use tessera::attr::{Attribute, Scalar};
use tessera::exec::tensor::{Tensor, TensorData};
use tessera::types::{ElementType, TensorType};

/// A rank-1 `i64` constant holding `values`.
fn int_vector(g: &Graph, values: &[i64]) -> Val {
    let ty = TensorType::new(vec![values.len() as u64], ElementType::I64);
    g.constant(Tensor::from_numbers(&ty, values.iter().map(|&v| v as f64)))
}

/// `Reshape`: `0` copies the input's dimension (unless `allowzero`), `-1` is inferred.
pub fn reshape(g: &mut Graph, node: &Node, inputs: &Inputs) -> NodeResult<Vec<Val>> {
    let x = input(inputs, 0)?;
    let spec = g.ints(&input(inputs, 1)?, "the shape input")?;
    let ty = g.ty(&x);
    let allow_zero = node.int("allowzero", 0) != 0;
    let mut shape = Vec::with_capacity(spec.len());
    let mut inferred = None;
    for (i, &d) in spec.iter().enumerate() {
        match d {
            -1 if inferred.is_none() => {
                inferred = Some(i);
                shape.push(1);
            }
            0 if !allow_zero => match ty.shape.get(i) {
                Some(&copy) => shape.push(copy),
                None => {
                    return invalid(format!(
                        "shape {spec:?} copies dimension {i}, which {ty} lacks"
                    ))
                }
            },
            d if d >= 0 => shape.push(d as u64),
            _ => return invalid(format!("shape {spec:?} is not a valid target shape")),
        }
    }
    let total = ty.num_elements().unwrap_or(0);
    if let Some(i) = inferred {
        let rest: u64 = shape.iter().product();
        if rest == 0 || total % rest != 0 {
            return invalid(format!("{ty} cannot be reshaped to {spec:?}"));
        }
        shape[i] = total / rest;
    }
    if shape.iter().product::<u64>() != total {
        return invalid(format!("{ty} cannot be reshaped to {spec:?}"));
    }
    Ok(vec![g.reshape(&x, shape)?])
}

/// `Flatten`: the dimensions before `axis` into one, the others into another.
pub fn flatten(g: &mut Graph, node: &Node, inputs: &Inputs) -> NodeResult<Vec<Val>> {
    let x = input(inputs, 0)?;
    let ty = g.ty(&x);
    let rank = ty.rank() as i64;
    let axis = node.int("axis", 1);
    if axis < -rank || axis > rank {
        return invalid(format!("axis {axis} is out of range for {ty}"));
    }
    let axis = if axis < 0 { axis + rank } else { axis } as usize;
    let (outer, inner) = ty.shape.split_at(axis);
    Ok(vec![g.reshape(
        &x,
        vec![outer.iter().product(), inner.iter().product()],
    )?])
}

/// `Transpose`: `perm`, or the dimensions reversed.
pub fn transpose(g: &mut Graph, node: &Node, inputs: &Inputs) -> NodeResult<Vec<Val>> {
    let x = input(inputs, 0)?;
    let rank = g.ty(&x).rank() as i64;
    let perm = node
        .ints("perm")
        .unwrap_or_else(|| (0..rank).rev().collect());
    let mut sorted = perm.clone();
    sorted.sort_unstable();
    if sorted != (0..rank).collect::<Vec<_>>() {
        return invalid(format!("perm {perm:?} is not a permutation of 0..{rank}"));
    }
    Ok(vec![g.transpose(&x, &perm)?])
}

/// The axes of `Squeeze`/`Unsqueeze`/reductions: an attribute before `input_from`, the
/// optional input 1 from then on.
pub fn axes_of(
    g: &Graph,
    node: &Node,
    inputs: &Inputs,
    input_from: i64,
) -> NodeResult<Option<Vec<i64>>> {
    if node.opset < input_from {
        return Ok(node.ints("axes"));
    }
    match inputs.get(1).cloned().flatten() {
        Some(v) => Ok(Some(g.ints(&v, "the axes input")?)),
        None => Ok(None),
    }
}

/// `Squeeze`: removes the given size-1 axes, or all of them.
pub fn squeeze(g: &mut Graph, node: &Node, inputs: &Inputs) -> NodeResult<Vec<Val>> {
    let x = input(inputs, 0)?;
    let ty = g.ty(&x);
    let axes = match axes_of(g, node, inputs, 13)? {
        Some(axes) => axes
            .iter()
            .map(|&a| axis_in(a, ty.rank()))
            .collect::<NodeResult<Vec<_>>>()?,
        None => (0..ty.rank()).filter(|&i| ty.shape[i] == 1).collect(),
    };
    if let Some(&a) = axes.iter().find(|&&a| ty.shape[a] != 1) {
        return invalid(format!("axis {a} of {ty} is not of size 1"));
    }
    let shape = (0..ty.rank())
        .filter(|i| !axes.contains(i))
        .map(|i| ty.shape[i])
        .collect();
    Ok(vec![g.reshape(&x, shape)?])
}

/// `Unsqueeze`: inserts size-1 axes at the given positions of the result.
pub fn unsqueeze(g: &mut Graph, node: &Node, inputs: &Inputs) -> NodeResult<Vec<Val>> {
    let x = input(inputs, 0)?;
    let ty = g.ty(&x);
    let Some(axes) = axes_of(g, node, inputs, 13)? else {
        return invalid("it has no axes");
    };
    let rank = ty.rank() + axes.len();
    let axes = axes
        .iter()
        .map(|&a| axis_in(a, rank))
        .collect::<NodeResult<Vec<_>>>()?;
    let mut dims = ty.shape.iter();
    let shape = (0..rank)
        .map(|i| {
            if axes.contains(&i) {
                1
            } else {
                *dims.next().unwrap_or(&1)
            }
        })
        .collect();
    Ok(vec![g.reshape(&x, shape)?])
}

/// `Concat` along `axis`.
pub fn concat(g: &mut Graph, node: &Node, inputs: &Inputs) -> NodeResult<Vec<Val>> {
    let values: Vec<Val> = inputs.iter().flatten().cloned().collect();
    let Some(first) = values.first() else {
        return invalid("it has no inputs");
    };
    let axis = axis_in(node.int("axis", 0), g.ty(first).rank())?;
    Ok(vec![concat_values(g, &values, axis)?])
}

/// `values` (at least one) concatenated along `axis`.
pub fn concat_values(g: &mut Graph, values: &[Val], axis: usize) -> NodeResult<Val> {
    // Empty operands contribute nothing (ONNX allows them; tessera needs none).
    let parts: Vec<Val> = values
        .iter()
        .filter(|v| g.ty(v).shape.get(axis).is_none_or(|&d| d > 0))
        .cloned()
        .collect();
    match (parts.as_slice(), values.first()) {
        ([], Some(first)) => Ok(first.clone()),
        ([], None) => invalid("it concatenates nothing"),
        ([one], _) => Ok(one.clone()),
        _ => g.op(
            "array.concat",
            &parts,
            &[("axis", Attribute::Int(axis as i64))],
            None,
        ),
    }
}

/// `Split` along `axis`: sizes from `split` (attribute before opset 13, input after), else
/// `num_outputs` (opset 18) or the output count, equal parts with a smaller last one.
pub fn split(g: &mut Graph, node: &Node, inputs: &Inputs) -> NodeResult<Vec<Val>> {
    let x = input(inputs, 0)?;
    let ty = g.ty(&x);
    let axis = axis_in(node.int("axis", 0), ty.rank())?;
    let dim = ty.shape[axis];
    let sizes: Vec<u64> = match if node.opset < 13 {
        node.ints("split")
    } else {
        inputs
            .get(1)
            .cloned()
            .flatten()
            .map(|v| g.ints(&v, "the split input"))
            .transpose()?
    } {
        Some(sizes) => sizes
            .iter()
            .map(|&s| {
                u64::try_from(s)
                    .map_err(|_| NodeError::Invalid(format!("split size {s} is negative")))
            })
            .collect::<NodeResult<_>>()?,
        None => {
            let outputs = node.proto.output.len() as i64;
            let parts = node.int("num_outputs", outputs);
            if parts != outputs || parts < 1 {
                return invalid(format!(
                    "num_outputs is {parts}, but the node has {outputs} output(s)"
                ));
            }
            let parts = parts as u64;
            let each = dim.div_ceil(parts);
            (0..parts)
                .map(|i| each.min(dim.saturating_sub(i * each)))
                .collect()
        }
    };
    split_into(g, &x, axis, &sizes)
}

/// `x` cut along `axis` into consecutive parts of `sizes`, which must add up to its extent.
pub fn split_into(g: &mut Graph, x: &Val, axis: usize, sizes: &[u64]) -> NodeResult<Vec<Val>> {
    let ty = g.ty(x);
    if sizes.iter().sum::<u64>() != ty.shape[axis] {
        return invalid(format!(
            "split sizes {sizes:?} do not add up to dimension {axis} of {ty}"
        ));
    }
    let mut outputs = Vec::new();
    let mut start = 0;
    for &size in sizes {
        let mut from = vec![0; ty.rank()];
        let mut to = ty.shape.clone();
        from[axis] = start;
        to[axis] = start + size;
        outputs.push(g.slice(x, &from, &to, &vec![1; ty.rank()])?);
        start += size;
    }
    Ok(outputs)
}

/// `Slice`: `starts`, `ends`, `axes`, `steps` (attributes before opset 10, inputs after),
/// clamped as ONNX clamps them; positive steps.
pub fn slice(g: &mut Graph, node: &Node, inputs: &Inputs) -> NodeResult<Vec<Val>> {
    let x = input(inputs, 0)?;
    let ty = g.ty(&x);
    let rank = ty.rank();
    let list = |i: usize, name: &str| -> NodeResult<Option<Vec<i64>>> {
        if node.opset < 10 {
            return Ok(node.ints(name));
        }
        inputs
            .get(i)
            .cloned()
            .flatten()
            .map(|v| g.ints(&v, &format!("the {name} input")))
            .transpose()
    };
    let starts = list(1, "starts")?.unwrap_or_default();
    let ends = list(2, "ends")?.unwrap_or_default();
    if starts.len() != ends.len() {
        return invalid("starts and ends differ in length");
    }
    let axes = list(3, "axes")?.unwrap_or_else(|| (0..starts.len() as i64).collect());
    let steps = list(4, "steps")?.unwrap_or_else(|| vec![1; starts.len()]);
    if axes.len() != starts.len() || steps.len() != starts.len() {
        return invalid("starts, ends, axes and steps differ in length");
    }
    let mut from = vec![0; rank];
    let mut to = ty.shape.clone();
    let mut stride = vec![1; rank];
    // Axes walked backwards: the indices they visit, picked after the forward slice.
    let mut backwards = Vec::new();
    for i in 0..starts.len() {
        let axis = axis_in(axes[i], rank)?;
        let dim = ty.shape[axis] as i64;
        let step = steps[i];
        if step == 0 {
            return invalid("a step is 0");
        }
        if step < 0 {
            // ONNX clamps a backward start into [0, dim - 1] and its end into [-1, dim - 1].
            let wrap = |v: i64| if v < 0 { v + dim } else { v };
            let start = wrap(starts[i]).clamp(0, dim - 1);
            let end = wrap(ends[i]).clamp(-1, dim - 1);
            let visited: Vec<i64> = (0..)
                .map(|k| start + k * step)
                .take_while(|&j| j > end)
                .collect();
            backwards.push((axis, visited));
            continue;
        }
        let clamp = |v: i64| if v < 0 { (v + dim).max(0) } else { v.min(dim) };
        let (s, e) = (clamp(starts[i]), clamp(ends[i]));
        from[axis] = s as u64;
        to[axis] = e.max(s) as u64;
        stride[axis] = step as u64;
    }
    let mut y = g.slice(&x, &from, &to, &stride)?;
    for (axis, visited) in backwards {
        y = pick(g, &y, axis, &visited)?;
    }
    Ok(vec![y])
}

/// `x` along `axis` at positions `indices` (constants): an `array.gather`.
pub(super) fn pick(g: &mut Graph, x: &Val, axis: usize, indices: &[i64]) -> NodeResult<Val> {
    if indices.is_empty() || g.ty(x).shape[axis] == 0 {
        let mut to = g.ty(x).shape;
        to[axis] = 0;
        let rank = to.len();
        return g.slice(x, &vec![0; rank], &to, &vec![1; rank]);
    }
    let ty = TensorType::new(vec![indices.len() as u64], ElementType::I64);
    let order = g.constant(Tensor::from_numbers(&ty, indices.iter().map(|&i| i as f64)));
    let attrs = [("axis", Attribute::Int(axis as i64))];
    g.op("array.gather", &[x.clone(), order], &attrs, None)
}

/// `Gather` along `axis`: `array.gather` (folded when data and indices are constants, as
/// the shape chains PyTorch exports are); constant indices out of range are an error.
pub fn gather(g: &mut Graph, node: &Node, inputs: &Inputs) -> NodeResult<Vec<Val>> {
    indexed(g, node, inputs, "array.gather")
}

/// `GatherElements`: `array.take_along`; constant indices are checked to be in range.
pub fn gather_elements(g: &mut Graph, node: &Node, inputs: &Inputs) -> NodeResult<Vec<Val>> {
    indexed(g, node, inputs, "array.take_along")
}

/// `op` (`array.gather` or `array.take_along`) of the data at the indices along `axis`;
/// constant indices out of range are an error (the op would clamp them).
fn indexed(g: &mut Graph, node: &Node, inputs: &Inputs, op: &str) -> NodeResult<Vec<Val>> {
    let data = input(inputs, 0)?;
    let indices = input(inputs, 1)?;
    let ty = g.ty(&data);
    let axis = axis_in(node.int("axis", 0), ty.rank())?;
    let dim = ty.shape[axis] as i64;
    if let Ok(picks) = g.ints(&indices, "the indices input") {
        if let Some(&i) = picks.iter().find(|&&i| i < -dim || i >= dim) {
            return invalid(format!(
                "index {i} is out of range for dimension {axis} of {ty}"
            ));
        }
    }
    let attrs = [("axis", Attribute::Int(axis as i64))];
    Ok(vec![g.op(op, &[data, indices], &attrs, None)?])
}

/// The numpy broadcast of shapes `a` and `b`.
fn broadcast_shapes(a: &[u64], b: &[u64]) -> NodeResult<Vec<u64>> {
    let rank = a.len().max(b.len());
    let at = |s: &[u64], i: usize| {
        if i + s.len() < rank {
            1
        } else {
            s[i + s.len() - rank]
        }
    };
    (0..rank)
        .map(|i| match (at(a, i), at(b, i)) {
            (x, y) if x == y || y == 1 => Ok(x),
            (1, y) => Ok(y),
            (x, y) => invalid(format!(
                "shapes {a:?} and {b:?} do not broadcast ({x} against {y})"
            )),
        })
        .collect()
}

/// `Expand`: broadcast to the broadcast of the input's shape and the given one.
pub fn expand(g: &mut Graph, _: &Node, inputs: &Inputs) -> NodeResult<Vec<Val>> {
    let x = input(inputs, 0)?;
    let spec = g.ints(&input(inputs, 1)?, "the shape input")?;
    if spec.iter().any(|&d| d < 0) {
        return invalid(format!("shape {spec:?} has a negative dimension"));
    }
    let spec: Vec<u64> = spec.iter().map(|&d| d as u64).collect();
    let shape = broadcast_shapes(&g.ty(&x).shape, &spec)?;
    Ok(vec![g.broadcast(&x, shape)?])
}

/// `Tile`: per axis with `r` repeats, a new axis of `r` before it (broadcast), then merged.
pub fn tile(g: &mut Graph, _: &Node, inputs: &Inputs) -> NodeResult<Vec<Val>> {
    let mut x = input(inputs, 0)?;
    let repeats = g.ints(&input(inputs, 1)?, "the repeats input")?;
    let rank = g.ty(&x).rank();
    if repeats.len() != rank || repeats.iter().any(|&r| r < 0) {
        return invalid(format!("repeats {repeats:?} do not fit rank {rank}"));
    }
    for (axis, &r) in repeats.iter().enumerate() {
        if r == 1 {
            continue;
        }
        let shape = g.ty(&x).shape;
        let mut expanded = shape[..axis].to_vec();
        expanded.push(1);
        expanded.extend(&shape[axis..]);
        let unit = g.reshape(&x, expanded.clone())?;
        expanded[axis] = r as u64;
        let repeated = g.broadcast(&unit, expanded)?;
        let mut merged = shape.clone();
        merged[axis] *= r as u64;
        x = g.reshape(&repeated, merged)?;
    }
    Ok(vec![x])
}

/// `Pad`: `pads` (attribute before opset 11, input after) as `[begin..., end...]` over `axes`
/// (opset 18), negative amounts slicing; in constant mode the fill value, in edge, reflect
/// and wrap modes the input's own elements (picked by `array.gather`).
pub fn pad(g: &mut Graph, node: &Node, inputs: &Inputs) -> NodeResult<Vec<Val>> {
    let x = input(inputs, 0)?;
    let ty = g.ty(&x);
    let rank = ty.rank();
    let mode = node.string("mode", "constant");
    if !matches!(mode.as_str(), "constant" | "edge" | "reflect" | "wrap") {
        return invalid(format!(
            "mode '{mode}' is not constant, edge, reflect or wrap"
        ));
    }
    let (pads, value, axes) = if node.opset < 11 {
        (
            node.ints("pads").unwrap_or_default(),
            node.float("value", 0.0),
            None,
        )
    } else {
        let pads = g.ints(&input(inputs, 1)?, "the pads input")?;
        let value = match inputs.get(2).cloned().flatten() {
            Some(v) => g
                .numbers(&v, "the constant_value input")?
                .first()
                .copied()
                .unwrap_or(0.0),
            None => 0.0,
        };
        let axes = inputs
            .get(3)
            .cloned()
            .flatten()
            .map(|v| g.ints(&v, "the axes input"))
            .transpose()?;
        (pads, value, axes)
    };
    let axes: Vec<usize> = match axes {
        Some(a) => a
            .iter()
            .map(|&a| axis_in(a, rank))
            .collect::<NodeResult<_>>()?,
        None => (0..rank).collect(),
    };
    if pads.len() != 2 * axes.len() {
        return invalid(format!("pads {pads:?} do not fit {} axes", axes.len()));
    }
    let (mut low, mut high) = (vec![0i64; rank], vec![0i64; rank]);
    for (i, &a) in axes.iter().enumerate() {
        low[a] = pads[i];
        high[a] = pads[i + axes.len()];
    }
    // Negative pads crop first.
    let from: Vec<u64> = low.iter().map(|&p| (-p).max(0) as u64).collect();
    let to: Vec<u64> = (0..rank)
        .map(|d| (ty.shape[d] as i64 + high[d].min(0)).max(from[d] as i64) as u64)
        .collect();
    let cropped = g.slice(&x, &from, &to, &vec![1; rank])?;
    if low.iter().chain(&high).all(|&p| p <= 0) {
        return Ok(vec![cropped]);
    }
    if mode != "constant" {
        // Edge, reflect and wrap read the input itself: per padded axis, its positions.
        let mut y = cropped;
        for d in 0..rank {
            let (before, after) = (low[d].max(0), high[d].max(0));
            if before == 0 && after == 0 {
                continue;
            }
            let dim = g.ty(&y).shape[d] as i64;
            if dim == 0 || (mode == "reflect" && (before >= dim || after >= dim)) {
                return invalid(format!(
                    "{mode} padding of {before} and {after} around dimension {d} of size {dim}"
                ));
            }
            let source = |j: i64| match mode.as_str() {
                "edge" => j.clamp(0, dim - 1),
                "wrap" => j.rem_euclid(dim),
                _ if j < 0 => -j,
                _ if j >= dim => 2 * (dim - 1) - j,
                _ => j,
            };
            let positions: Vec<i64> = (-before..dim + after).map(source).collect();
            y = pick(g, &y, d, &positions)?;
        }
        return Ok(vec![y]);
    }
    let list = |v: &[i64]| Attribute::List(v.iter().map(|&p| Attribute::Int(p.max(0))).collect());
    let value = if ty.element.is_float() {
        Attribute::Float(value)
    } else {
        Attribute::Int(value as i64)
    };
    let attrs = [("low", list(&low)), ("high", list(&high)), ("value", value)];
    Ok(vec![g.op("array.pad", &[cropped], &attrs, None)?])
}

/// `Shape`: the input's static shape (from `start` to `end`, opset 15) as an `i64` constant.
pub fn shape(g: &mut Graph, node: &Node, inputs: &Inputs) -> NodeResult<Vec<Val>> {
    let ty = g.ty(&input(inputs, 0)?);
    let rank = ty.rank() as i64;
    let clamp = |v: i64| (if v < 0 { v + rank } else { v }).clamp(0, rank) as usize;
    let start = clamp(node.int("start", 0));
    let end = clamp(node.int("end", rank));
    let dims: Vec<i64> = ty.shape[start..end.max(start)]
        .iter()
        .map(|&d| d as i64)
        .collect();
    Ok(vec![int_vector(g, &dims)])
}

/// `Size`: the element count as an `i64` scalar.
pub fn size(g: &mut Graph, _: &Node, inputs: &Inputs) -> NodeResult<Vec<Val>> {
    let count = g.ty(&input(inputs, 0)?).num_elements().unwrap_or(0);
    Ok(vec![g.scalar(count as f64, ElementType::I64)])
}

/// `Constant`: a tensor, or one of the scalar and list forms.
pub fn constant(g: &mut Graph, node: &Node, _: &Inputs) -> NodeResult<Vec<Val>> {
    let vector = |element: ElementType, values: Vec<f64>| {
        let ty = TensorType::new(vec![values.len() as u64], element);
        Tensor::from_numbers(&ty, values)
    };
    let tensor = if let Some(t) = node.tensor("value") {
        tensor_of(t, super::CONSTANT_LIMIT).map_err(|e| NodeError::Invalid(e.to_string()))?
    } else if let Some(a) = node.attr("value_float") {
        Tensor::from_numbers(&TensorType::new(vec![], ElementType::F32), [f64::from(a.f)])
    } else if let Some(a) = node.attr("value_int") {
        Tensor::from_numbers(&TensorType::new(vec![], ElementType::I64), [a.i as f64])
    } else if let Some(a) = node.attr("value_floats") {
        vector(
            ElementType::F32,
            a.floats.iter().map(|&f| f64::from(f)).collect(),
        )
    } else if let Some(a) = node.attr("value_ints") {
        vector(ElementType::I64, a.ints.iter().map(|&i| i as f64).collect())
    } else {
        return unsupported("Constant of a sparse tensor");
    };
    let key = node.proto.output.first().cloned().unwrap_or_default();
    Ok(vec![g.named_constant(tensor, &key)])
}

/// `Constant` of any kind: a tensor of strings (a `value` of strings, `value_string`,
/// `value_strings`) as their ids, else [`constant`].
pub fn constant_item(
    c: &mut NodeConverter,
    node: &Node,
    _: &Items,
    _: &Scope,
) -> Result<Vec<Item>, Failure> {
    let text = |bytes: &[u8]| String::from_utf8_lossy(bytes).into_owned();
    let (shape, strings) = match (
        node.tensor("value"),
        node.attr("value_string"),
        node.attr("value_strings"),
    ) {
        (Some(t), _, _) if is_strings(t) => {
            strings_of(t, super::CONSTANT_LIMIT).map_err(|e| NodeError::Invalid(e.to_string()))?
        }
        (None, Some(a), _) => (vec![], vec![text(&a.s)]),
        (None, None, Some(a)) => (
            vec![a.strings.len() as u64],
            a.strings.iter().map(|s| text(s)).collect(),
        ),
        _ => {
            let values = constant(&mut c.g, node, &[])?;
            return Ok(values.into_iter().map(Item::Tensor).collect());
        }
    };
    let key = node.proto.output.first().cloned().unwrap_or_default();
    Ok(vec![Item::Strings(
        c.g.string_constant(shape, &strings, &key),
    )])
}

/// `ConstantOfShape`: the shape filled with `value` (a one-element tensor; default f32 0).
pub fn constant_of_shape(g: &mut Graph, node: &Node, inputs: &Inputs) -> NodeResult<Vec<Val>> {
    let dims = g.ints(&input(inputs, 0)?, "the shape input")?;
    if dims.iter().any(|&d| d < 0) {
        return invalid(format!("shape {dims:?} has a negative dimension"));
    }
    let value = match node.tensor("value") {
        Some(t) => {
            let v = tensor_of(t, super::CONSTANT_LIMIT)
                .map_err(|e| NodeError::Invalid(e.to_string()))?;
            if v.len() != 1 {
                return invalid("value must have one element");
            }
            v
        }
        None => Tensor::from_numbers(&TensorType::new(vec![1], ElementType::F32), [0.0]),
    };
    let ty = TensorType::new(dims.iter().map(|&d| d as u64).collect(), value.ty.element);
    let scalar = match &value.data {
        TensorData::Float(x) => Scalar::Float(x[0]),
        TensorData::Int(x) => Scalar::Int(x[0]),
        TensorData::Bool(x) => Scalar::Bool(x[0]),
    };
    Ok(vec![g.splat(scalar, ty)])
}

/// `Range` of constant `start`, `limit`, `delta`: the sequence, computed at import time.
pub fn range(g: &mut Graph, _: &Node, inputs: &Inputs) -> NodeResult<Vec<Val>> {
    let element = g.ty(&input(inputs, 0)?).element;
    let mut bounds = [0.0; 3];
    for (i, what) in ["start", "limit", "delta"].iter().enumerate() {
        let values = g.numbers(&input(inputs, i)?, &format!("the {what} input"))?;
        bounds[i] = *values
            .first()
            .ok_or_else(|| NodeError::Invalid(format!("{what} is empty")))?;
    }
    let [start, limit, delta] = bounds;
    if delta == 0.0 || !delta.is_finite() {
        return invalid(format!("delta {delta} is not a nonzero finite number"));
    }
    let count = ((limit - start) / delta).ceil().max(0.0);
    if count > (super::CONSTANT_LIMIT / 8) as f64 {
        return unsupported(format!(
            "Range of {count} elements, over the importer's constant limit"
        ));
    }
    let ty = TensorType::new(vec![count as u64], element);
    let values = (0..count as u64).map(|i| start + i as f64 * delta);
    Ok(vec![g.constant(Tensor::from_numbers(&ty, values))])
}

/// `Trilu`: the upper (`upper = 1`) or lower triangle of the last two dimensions from
/// diagonal `k` (a constant input), the rest zero: a select by a constant mask.
pub fn trilu(g: &mut Graph, node: &Node, inputs: &Inputs) -> NodeResult<Vec<Val>> {
    let x = input(inputs, 0)?;
    let ty = g.ty(&x);
    if ty.rank() < 2 {
        return invalid(format!("its input {ty} has rank below 2"));
    }
    let k = match inputs.get(1).cloned().flatten() {
        Some(v) => *g.ints(&v, "the k input")?.first().unwrap_or(&0),
        None => 0,
    };
    let upper = node.int("upper", 1) != 0;
    let (rows, cols) = (ty.shape[ty.rank() - 2], ty.shape[ty.rank() - 1]);
    let mask_ty = TensorType::new(vec![rows, cols], ElementType::I1);
    let keep = (0..rows).flat_map(|i| {
        (0..cols).map(move |j| {
            let d = j as i64 - i as i64;
            f64::from(u8::from(if upper { d >= k } else { d <= k }))
        })
    });
    let mask = g.constant(Tensor::from_numbers(&mask_ty, keep));
    let zero = g.scalar(0.0, ty.element);
    Ok(vec![g.select(&mask, &x, &zero)?])
}
