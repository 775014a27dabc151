//! Sequences of tensors, resolved at import time: a sequence is the list of its elements'
//! values, so building, indexing, inserting and erasing move values around the importer
//! (positions must be known at import time, as shapes are), `ConcatFromSequence` and
//! `SplitToSequence` become concatenations and slices, and `SequenceMap` converts its body
//! once per element.

use super::control_flow::graph;
use super::shape::{concat_values, split_into};
use super::{axis_in, item, tensor_item, Items};
use crate::graph::{invalid, NodeError, NodeResult, Val};
use crate::item::Item;
use crate::node::Node;
use crate::nodes::{Failure, NodeConverter, Scope};
use tessera::exec::tensor::Tensor;
use tessera::types::{ElementType, TensorType};

/// The elements of sequence input `index`, which the op requires.
fn sequence_item(inputs: &Items, index: usize) -> NodeResult<Vec<Val>> {
    item(inputs, index)?.sequence(&format!("input #{index}"))
}

/// Checks that `value` may join `elements`: ONNX sequences hold tensors of one element type.
fn check_element(c: &NodeConverter, elements: &[Val], value: &Val) -> NodeResult<()> {
    let ty = c.g.ty(value);
    match elements.first().map(|first| c.g.ty(first).element) {
        Some(element) if element != ty.element => invalid(format!(
            "it puts a {ty} tensor into a sequence of {element} tensors"
        )),
        _ => Ok(()),
    }
}

/// The position given by input `index` (default `default` when absent) in a sequence of
/// `len` elements, checked against `-len..=len` (`-len..len` unless `at_end` may be `len`).
fn position(
    c: &NodeConverter,
    inputs: &Items,
    index: usize,
    len: usize,
    default: i64,
    at_end: bool,
) -> NodeResult<usize> {
    let at = match inputs.get(index) {
        Some(Some(_)) => {
            let v = tensor_item(inputs, index)?;
            match c.g.ints(&v, "the position")?.as_slice() {
                [p] => *p,
                other => {
                    return invalid(format!("the position has {} values, not one", other.len()))
                }
            }
        }
        _ => default,
    };
    let n = len as i64;
    let upper = if at_end { n } else { n - 1 };
    if at < -n || at > upper {
        return invalid(format!(
            "position {at} is out of range for a sequence of {len} element(s)"
        ));
    }
    Ok(if at < 0 { at + n } else { at } as usize)
}

/// `SequenceEmpty`: a sequence of no elements.
pub fn empty(_: &mut NodeConverter, _: &Node, _: &Items, _: &Scope) -> Result<Vec<Item>, Failure> {
    Ok(vec![Item::Sequence(Vec::new())])
}

/// `SequenceConstruct`: its inputs, in order, as a sequence.
pub fn construct(
    c: &mut NodeConverter,
    _: &Node,
    inputs: &Items,
    _: &Scope,
) -> Result<Vec<Item>, Failure> {
    let mut elements = Vec::with_capacity(inputs.len());
    for index in 0..inputs.len() {
        let value = tensor_item(inputs, index)?;
        check_element(c, &elements, &value)?;
        elements.push(value);
    }
    Ok(vec![Item::Sequence(elements)])
}

/// `SequenceInsert`: the tensor inserted at the position (at the end without one).
pub fn insert(
    c: &mut NodeConverter,
    _: &Node,
    inputs: &Items,
    _: &Scope,
) -> Result<Vec<Item>, Failure> {
    let mut elements = sequence_item(inputs, 0)?;
    let value = tensor_item(inputs, 1)?;
    check_element(c, &elements, &value)?;
    let at = position(c, inputs, 2, elements.len(), elements.len() as i64, true)?;
    elements.insert(at, value);
    Ok(vec![Item::Sequence(elements)])
}

/// `SequenceErase`: the sequence without the element at the position (the last without one).
pub fn erase(
    c: &mut NodeConverter,
    _: &Node,
    inputs: &Items,
    _: &Scope,
) -> Result<Vec<Item>, Failure> {
    let mut elements = sequence_item(inputs, 0)?;
    let at = position(c, inputs, 1, elements.len(), -1, false)?;
    elements.remove(at);
    Ok(vec![Item::Sequence(elements)])
}

/// `SequenceAt`: the element at the position.
pub fn at(
    c: &mut NodeConverter,
    _: &Node,
    inputs: &Items,
    _: &Scope,
) -> Result<Vec<Item>, Failure> {
    let elements = sequence_item(inputs, 0)?;
    if inputs.get(1).is_none_or(Option::is_none) {
        invalid("input #1 (the position) is required")?;
    }
    let at = position(c, inputs, 1, elements.len(), 0, false)?;
    Ok(vec![Item::Tensor(elements[at].clone())])
}

/// `SequenceLength`: the number of elements, an `i64` scalar.
pub fn length(
    c: &mut NodeConverter,
    _: &Node,
    inputs: &Items,
    _: &Scope,
) -> Result<Vec<Item>, Failure> {
    let n = sequence_item(inputs, 0)?.len();
    let ty = TensorType::new(vec![], ElementType::I64);
    Ok(vec![Item::Tensor(
        c.g.constant(Tensor::from_numbers(&ty, [n as f64])),
    )])
}

/// `ConcatFromSequence`: the elements concatenated along `axis`, or stacked along a new axis
/// `axis` with `new_axis` 1.
pub fn concat_from_sequence(
    c: &mut NodeConverter,
    node: &Node,
    inputs: &Items,
    _: &Scope,
) -> Result<Vec<Item>, Failure> {
    let elements = sequence_item(inputs, 0)?;
    let Some(first) = elements.first() else {
        let why = "its sequence is empty: there is nothing to concatenate";
        return Err(NodeError::Invalid(why.into()).into());
    };
    let ty = c.g.ty(first);
    let new_axis = node.int("new_axis", 0) != 0;
    let rank = ty.rank() + usize::from(new_axis);
    let axis = node
        .attr("axis")
        .map(|a| a.i)
        .ok_or_else(|| NodeError::Invalid("it has no axis attribute".into()))?;
    let axis = axis_in(axis, rank)?;
    let mut parts = Vec::with_capacity(elements.len());
    for element in &elements {
        let element_ty = c.g.ty(element);
        if element_ty.rank() != ty.rank() || element_ty.element != ty.element {
            invalid(format!(
                "its elements are {ty} and {element_ty}, which do not concatenate"
            ))?;
        }
        parts.push(if new_axis {
            let mut shape = element_ty.shape.clone();
            shape.insert(axis, 1);
            c.g.reshape(element, shape)?
        } else {
            element.clone()
        });
    }
    Ok(vec![Item::Tensor(concat_values(&mut c.g, &parts, axis)?)])
}

/// `SplitToSequence`: the input cut along `axis` into parts of the `split` sizes (a scalar:
/// parts of that size, the last smaller; a list: those sizes), or without `split` into parts
/// of one, the axis dropped unless `keepdims`.
pub fn split_to_sequence(
    c: &mut NodeConverter,
    node: &Node,
    inputs: &Items,
    _: &Scope,
) -> Result<Vec<Item>, Failure> {
    let x = tensor_item(inputs, 0)?;
    let ty = c.g.ty(&x);
    let axis = axis_in(node.int("axis", 0), ty.rank())?;
    let extent = ty.shape[axis];
    let split = match inputs.get(1) {
        Some(Some(_)) => {
            let v = tensor_item(inputs, 1)?;
            Some((c.g.ints(&v, "the split")?, c.g.ty(&v).rank() == 0))
        }
        _ => None,
    };
    let sizes: Vec<u64> = match &split {
        Some((sizes, _)) if sizes.iter().any(|&s| s < 0) => {
            invalid(format!("split sizes {sizes:?} include a negative one"))?
        }
        Some((size, true)) => {
            let each = size[0] as u64;
            if each == 0 {
                invalid("the split size is 0")?;
            }
            (0..extent.div_ceil(each))
                .map(|i| each.min(extent - i * each))
                .collect()
        }
        Some((sizes, false)) => sizes.iter().map(|&s| s as u64).collect(),
        None => vec![1; extent as usize],
    };
    let mut parts = split_into(&mut c.g, &x, axis, &sizes)?;
    if split.is_none() && node.int("keepdims", 1) == 0 {
        let mut shape = ty.shape.clone();
        shape.remove(axis);
        for part in &mut parts {
            *part = c.g.reshape(part, shape.clone())?;
        }
    }
    Ok(vec![Item::Sequence(parts)])
}

/// `SequenceMap`: the body once per element of the sequence inputs (which must be of one
/// length), each given the elements at that position and the tensor inputs whole; each body
/// output collected into a sequence.
pub fn map(
    c: &mut NodeConverter,
    node: &Node,
    inputs: &Items,
    scope: &Scope,
) -> Result<Vec<Item>, Failure> {
    let body = graph(node, "body")?;
    let values = (0..inputs.len())
        .map(|index| item(inputs, index))
        .collect::<NodeResult<Vec<Item>>>()?;
    let length = sequence_item(inputs, 0)?.len();
    for value in &values {
        if let Item::Sequence(elements) = value {
            if elements.len() != length {
                invalid(format!(
                    "its sequences have {length} and {} elements; they must be of one length",
                    elements.len()
                ))?;
            }
        }
    }
    let mut outputs = vec![Vec::new(); body.output.len()];
    for position in 0..length {
        let body_inputs = values
            .iter()
            .map(|value| match value {
                Item::Sequence(elements) => Item::Tensor(elements[position].clone()),
                other => other.clone(),
            })
            .collect();
        let results = c.body(node, body, scope, body_inputs)?;
        for (all, result) in outputs.iter_mut().zip(results) {
            all.push(result.tensor("a SequenceMap body's output")?);
        }
    }
    Ok(outputs.into_iter().map(Item::Sequence).collect())
}
