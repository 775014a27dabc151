//! Control flow, unrolled at import time: `If` inlines the branch its condition takes (both
//! branches and a select when the condition is known only at run time), `Loop` and `Scan`
//! repeat their body once per iteration. tessera compiles for static shapes, so a loop's
//! iterations must be known at import time: its trip count and each iteration's condition
//! constants (folded from the model's constants and static shapes, as PyTorch's exported
//! loops have them).

use super::{axis_in, tensor_item, Items};
use crate::graph::{invalid, unsupported, NodeError, NodeResult, Val};
use crate::item::Item;
use crate::node::Node;
use crate::nodes::{Failure, NodeConverter, Scope};
use crate::proto::GraphProto;
use tessera::attr::Attribute;
use tessera::exec::tensor::Tensor;
use tessera::types::{ElementType, TensorType};

/// The most iterations a `Loop` or `Scan` is unrolled to.
pub const MAX_ITERATIONS: u64 = 4096;

/// The most body nodes one `Loop` or `Scan` is unrolled to, all iterations together.
const MAX_UNROLLED_NODES: u64 = 1 << 18;

/// Graph attribute `name` of `node`.
pub(super) fn graph<'m>(node: &Node<'m>, name: &str) -> NodeResult<&'m GraphProto> {
    match node.attr(name).and_then(|a| a.g.as_ref()) {
        Some(g) => Ok(g),
        None => invalid(format!("it has no graph attribute '{name}'")),
    }
}

/// Whether `v`, a one-element condition, is true; `None` when it is known only at run time.
pub fn truth(c: &NodeConverter, v: &Val, what: &str) -> NodeResult<Option<bool>> {
    match c.g.numbers(v, what) {
        Ok(n) if n.len() == 1 => Ok(Some(n[0] != 0.0)),
        Ok(n) => invalid(format!("{what} has {} elements, not one", n.len())),
        Err(NodeError::Unsupported(_)) => Ok(None),
        Err(e) => Err(e),
    }
}

/// `If`: the branch the condition takes, inlined; on a condition known only at run time,
/// both branches and a select of their results (which must then be of the same types; of
/// sequences, of the same lengths; of optionals, both empty or both holding a value).
pub fn if_(
    c: &mut NodeConverter,
    node: &Node,
    inputs: &Items,
    scope: &Scope,
) -> Result<Vec<Item>, Failure> {
    let cond = tensor_item(inputs, 0)?;
    let (then_branch, else_branch) = (graph(node, "then_branch")?, graph(node, "else_branch")?);
    match truth(c, &cond, "the condition")? {
        Some(true) => c.body(node, then_branch, scope, vec![]),
        Some(false) => c.body(node, else_branch, scope, vec![]),
        None => {
            let cond = c.g.reshape(&cond, vec![])?;
            let taken = c.body(node, then_branch, scope, vec![])?;
            let other = c.body(node, else_branch, scope, vec![])?;
            if taken.len() != other.len() {
                return Err(invalid_node(format!(
                    "its branches give {} and {} outputs",
                    taken.len(),
                    other.len()
                )));
            }
            let mut outputs = Vec::with_capacity(taken.len());
            for (a, b) in taken.iter().zip(&other) {
                outputs.push(select(c, &cond, a, b)?);
            }
            Ok(outputs)
        }
    }
}

/// `a` where `cond` holds, else `b`, for branch outputs of any kind: tensors of one type,
/// sequences element by element, optionals by their contents.
fn select(c: &mut NodeConverter, cond: &Val, a: &Item, b: &Item) -> NodeResult<Item> {
    let differ = |what: String| {
        unsupported(format!(
            "its condition is computed from the graph's inputs at run time and its branches \
             give {what}, which cannot be selected between (tessera selects between values of \
             one type, sequences of one length, optionals both empty or both holding a value); \
             tessera needs it known at import time"
        ))
    };
    match (a, b) {
        (Item::Tensor(a), Item::Tensor(b)) => {
            let (ta, tb) = (c.g.ty(a), c.g.ty(b));
            if ta != tb {
                return differ(format!("{ta} and {tb}"));
            }
            Ok(Item::Tensor(c.g.select(cond, a, b)?))
        }
        (Item::Strings(a), Item::Strings(b)) => {
            let both = (Item::Tensor(a.clone()), Item::Tensor(b.clone()));
            let chosen = select(c, cond, &both.0, &both.1)?.tensor("a branch's strings")?;
            Ok(Item::Strings(chosen))
        }
        (Item::Sequence(a), Item::Sequence(b)) if a.len() == b.len() => {
            let mut elements = Vec::with_capacity(a.len());
            for (a, b) in a.iter().zip(b) {
                let both = (Item::Tensor(a.clone()), Item::Tensor(b.clone()));
                elements.push(select(c, cond, &both.0, &both.1)?.tensor("an element")?);
            }
            Ok(Item::Sequence(elements))
        }
        (Item::Sequence(a), Item::Sequence(b)) => {
            differ(format!("sequences of {} and {} elements", a.len(), b.len()))
        }
        (Item::Optional(None), Item::Optional(None)) => Ok(Item::Optional(None)),
        (Item::Optional(Some(a)), Item::Optional(Some(b))) => {
            Ok(Item::Optional(Some(Box::new(select(c, cond, a, b)?))))
        }
        (Item::Optional(_), Item::Optional(_)) => {
            differ("an optional with a value and an empty one".into())
        }
        (a, b) => differ(format!("{} and {}", a.kind(), b.kind())),
    }
}

/// Checks that unrolling `iterations` of `body` stays within the limits.
fn check_unrolled(iterations: u64, body: &GraphProto) -> NodeResult<()> {
    let nodes = iterations.saturating_mul(body.node.len() as u64);
    if iterations > MAX_ITERATIONS || nodes > MAX_UNROLLED_NODES {
        return unsupported(format!(
            "it runs {iterations} iterations of {} nodes; tessera unrolls loops of at most \
             {MAX_ITERATIONS} iterations and {MAX_UNROLLED_NODES} nodes in all",
            body.node.len()
        ));
    }
    Ok(())
}

/// `values` stacked along a new axis `axis` (in their order).
fn stack(c: &mut NodeConverter, values: &[Val], axis: i64) -> NodeResult<Val> {
    let Some(first) = values.first() else {
        return unsupported(
            "it runs no iteration, so its scan outputs would be empty, which tessera's static \
             shapes cannot hold",
        );
    };
    let ty = c.g.ty(first);
    let axis = axis_in(axis, ty.rank() + 1)?;
    let mut shape = ty.shape.clone();
    shape.insert(axis, 1);
    let mut slices = Vec::with_capacity(values.len());
    for v in values {
        if c.g.ty(v) != ty {
            return unsupported(format!(
                "its scan output changes type between iterations ({ty}, then {}); tessera \
                 stacks outputs of one type",
                c.g.ty(v)
            ));
        }
        slices.push(c.g.reshape(v, shape.clone())?);
    }
    if slices.len() == 1 {
        return Ok(slices.remove(0));
    }
    c.g.op(
        "array.concat",
        &slices,
        &[("axis", Attribute::Int(axis as i64))],
        None,
    )
}

/// `Loop`: the body once per iteration while the trip count lasts and the condition holds;
/// the last loop-carried values, then the scan outputs stacked along a new first axis.
pub fn loop_(
    c: &mut NodeConverter,
    node: &Node,
    inputs: &Items,
    scope: &Scope,
) -> Result<Vec<Item>, Failure> {
    let body = graph(node, "body")?;
    let trip_count = match inputs.first() {
        Some(Some(_)) => {
            let m = tensor_item(inputs, 0)?;
            Some(
                c.g.ints(&m, "the trip count")?
                    .first()
                    .copied()
                    .unwrap_or(0),
            )
        }
        _ => None,
    };
    let mut running = match inputs.get(1) {
        Some(Some(_)) => {
            let cond = tensor_item(inputs, 1)?;
            known(
                truth(c, &cond, "the initial condition")?,
                "the initial condition",
            )?
        }
        _ if trip_count.is_none() => {
            return Err(invalid_node(
                "it has neither a trip count nor a condition: it never ends",
            ))
        }
        _ => true,
    };
    let mut carried = inputs
        .get(2..)
        .unwrap_or_default()
        .iter()
        .map(|v| {
            v.clone()
                .ok_or_else(|| invalid_node("a loop-carried input is absent"))
        })
        .collect::<Result<Vec<Item>, Failure>>()?;
    let iterations = trip_count.map_or(u64::MAX, |m| m.max(0) as u64);
    if running && trip_count.is_some() {
        check_unrolled(iterations, body)?;
    }
    let scan_count = body.output.len().saturating_sub(1 + carried.len());
    let mut scans: Vec<Vec<Val>> = vec![Vec::new(); scan_count];
    let mut i = 0u64;
    while running && i < iterations {
        check_unrolled(i + 1, body)?;
        let iteration = c.g.constant(Tensor::from_numbers(
            &TensorType::new(vec![], ElementType::I64),
            [i as f64],
        ));
        let condition = c.g.constant(Tensor::from_numbers(
            &TensorType::new(vec![], ElementType::I1),
            [1.0],
        ));
        let mut body_inputs = vec![Item::Tensor(iteration), Item::Tensor(condition)];
        body_inputs.extend(carried.iter().cloned());
        let outputs = c.body(node, body, scope, body_inputs)?;
        if outputs.len() != 1 + carried.len() + scan_count {
            return Err(invalid_node(format!(
                "its body gives {} outputs; it needs the condition and {} loop-carried values \
                 (and the scan outputs)",
                outputs.len(),
                carried.len()
            )));
        }
        let condition = "the condition an iteration computes";
        let computed = outputs[0].tensor(condition)?;
        running = known(truth(c, &computed, condition)?, condition)?;
        for (scan, v) in scans.iter_mut().zip(&outputs[1 + carried.len()..]) {
            scan.push(v.tensor("a scan output")?);
        }
        carried = outputs[1..1 + carried.len()].to_vec();
        i += 1;
    }
    let mut results = carried;
    for scan in &scans {
        results.push(Item::Tensor(stack(c, scan, 0)?));
    }
    Ok(results)
}

/// How a `Scan` walks its scan inputs and stacks its scan outputs.
struct ScanAxes {
    /// Each scan input's scan axis.
    inputs: Vec<usize>,
    /// Whether each scan input is walked from its end.
    inputs_reversed: Vec<bool>,
    /// The axis each scan output is stacked along (negative from the end).
    outputs: Vec<i64>,
    /// Whether each scan output is stacked last iteration first.
    outputs_reversed: Vec<bool>,
}

/// `Scan`: the body once per slice of the scan inputs along their scan axes, state carried
/// from one to the next; the last state, then the scan outputs stacked. Before opset 9 every
/// input has a batch axis first, scanned along the next: the scan runs per batch element.
pub fn scan(
    c: &mut NodeConverter,
    node: &Node,
    inputs: &Items,
    scope: &Scope,
) -> Result<Vec<Item>, Failure> {
    let body = graph(node, "body")?;
    let batched = node.opset < 9;
    let (sequence_lens, inputs) = match inputs.split_first() {
        Some((Some(lens), rest)) if batched => (Some(lens.tensor("sequence_lens")?), rest),
        Some((None, rest)) if batched => (None, rest),
        _ => (None, inputs),
    };
    let scanned = node.int("num_scan_inputs", 0);
    if scanned < 1 || scanned as usize > inputs.len() {
        return Err(invalid_node(format!(
            "num_scan_inputs is {scanned} for {} inputs",
            inputs.len()
        )));
    }
    let (scanned, state_count) = (scanned as usize, inputs.len() - scanned as usize);
    let values = (0..inputs.len())
        .map(|i| tensor_item(inputs, i).map_err(Failure::from))
        .collect::<Result<Vec<Val>, Failure>>()?;
    let Some(output_count) = body.output.len().checked_sub(state_count) else {
        return Err(invalid_node(format!(
            "its body gives {} outputs, fewer than its {state_count} state values",
            body.output.len()
        )));
    };
    let list = |name: &str, count: usize| -> Result<Vec<i64>, Failure> {
        let values = node.ints(name).unwrap_or_else(|| vec![0; count]);
        if values.len() != count {
            return Err(invalid_node(format!(
                "{name} has {} entries, not {count}",
                values.len()
            )));
        }
        Ok(values)
    };
    let flags = |v: Vec<i64>| v.into_iter().map(|d| d != 0).collect();
    let input_axes = if batched {
        vec![0; scanned]
    } else {
        list("scan_input_axes", scanned)?
    };
    let mut axes = ScanAxes {
        inputs: Vec::with_capacity(scanned),
        inputs_reversed: flags(list(
            if batched {
                "directions"
            } else {
                "scan_input_directions"
            },
            scanned,
        )?),
        outputs: if batched {
            vec![0; output_count]
        } else {
            list("scan_output_axes", output_count)?
        },
        outputs_reversed: if batched {
            vec![false; output_count]
        } else {
            flags(list("scan_output_directions", output_count)?)
        },
    };
    let (state, xs) = values.split_at(state_count);
    for (x, &axis) in xs.iter().zip(&input_axes) {
        let rank = c.g.ty(x).rank();
        let rank = if batched {
            rank.saturating_sub(1)
        } else {
            rank
        };
        axes.inputs.push(axis_in(axis, rank)?);
    }
    if !batched {
        let results = scan_sequence(c, node, body, scope, state.to_vec(), xs, &axes)?;
        return Ok(results.into_iter().map(Item::Tensor).collect());
    }
    let batch = values
        .first()
        .map_or(0, |v| c.g.ty(v).shape.first().copied().unwrap_or(0));
    if values
        .iter()
        .any(|v| c.g.ty(v).shape.first() != Some(&batch))
    {
        return Err(invalid_node(
            "its inputs differ in their batch (first) axis",
        ));
    }
    if let Some(lens) = sequence_lens {
        let length = xs
            .first()
            .map_or(0, |x| c.g.ty(x).shape.get(1).copied().unwrap_or(0));
        if c.g
            .ints(&lens, "sequence_lens")?
            .iter()
            .any(|&l| l as u64 != length)
        {
            return Err(NodeError::Unsupported(
                "its sequence_lens end sequences early; tessera scans whole sequences".into(),
            )
            .into());
        }
    }
    let mut per_batch: Vec<Vec<Val>> = vec![Vec::new(); body.output.len()];
    for b in 0..batch {
        let element_values = values
            .iter()
            .map(|v| element(c, v, 0, b))
            .collect::<NodeResult<Vec<Val>>>()?;
        let (state, xs) = element_values.split_at(state_count);
        let results = scan_sequence(c, node, body, scope, state.to_vec(), xs, &axes)?;
        for (all, v) in per_batch.iter_mut().zip(results) {
            all.push(v);
        }
    }
    Ok(per_batch
        .iter()
        .map(|all| stack(c, all, 0).map(Item::Tensor))
        .collect::<NodeResult<Vec<Item>>>()?)
}

/// The scan of `xs` along `axes` from `state`: the last state, then the scan outputs stacked.
fn scan_sequence(
    c: &mut NodeConverter,
    node: &Node,
    body: &GraphProto,
    scope: &Scope,
    mut state: Vec<Val>,
    xs: &[Val],
    axes: &ScanAxes,
) -> Result<Vec<Val>, Failure> {
    let mut length = None;
    for (x, &axis) in xs.iter().zip(&axes.inputs) {
        let extent = c.g.ty(x).shape[axis];
        if length.is_some_and(|l| l != extent) {
            return Err(invalid_node(
                "its scan inputs differ in length along their scan axes",
            ));
        }
        length = Some(extent);
    }
    let length = length.unwrap_or(0);
    check_unrolled(length, body)?;
    let state_count = state.len();
    let mut scans: Vec<Vec<Val>> = vec![Vec::new(); axes.outputs.len()];
    for t in 0..length {
        let mut body_inputs: Vec<Item> = state.iter().cloned().map(Item::Tensor).collect();
        for ((x, &axis), &reversed) in xs.iter().zip(&axes.inputs).zip(&axes.inputs_reversed) {
            let index = if reversed { length - 1 - t } else { t };
            body_inputs.push(Item::Tensor(element(c, x, axis, index)?));
        }
        let outputs = c
            .body(node, body, scope, body_inputs)?
            .iter()
            .map(|v| v.tensor("a scan body's output"))
            .collect::<NodeResult<Vec<Val>>>()?;
        for (scan, v) in scans.iter_mut().zip(&outputs[state_count..]) {
            scan.push(v.clone());
        }
        state = outputs[..state_count].to_vec();
    }
    for ((scan, &axis), &reversed) in scans
        .iter_mut()
        .zip(&axes.outputs)
        .zip(&axes.outputs_reversed)
    {
        if reversed {
            scan.reverse();
        }
        state.push(stack(c, scan, axis)?);
    }
    Ok(state)
}

/// Element `index` of `x` along `axis`, that axis dropped.
fn element(c: &mut NodeConverter, x: &Val, axis: usize, index: u64) -> NodeResult<Val> {
    let ty = c.g.ty(x);
    let mut start = vec![0; ty.rank()];
    let mut limit = ty.shape.clone();
    start[axis] = index;
    limit[axis] = index + 1;
    let slice = c.g.slice(x, &start, &limit, &vec![1; ty.rank()])?;
    let mut shape = ty.shape;
    shape.remove(axis);
    c.g.reshape(&slice, shape)
}

/// The condition `what`, which must be known at import time.
fn known(value: Option<bool>, what: &str) -> Result<bool, Failure> {
    value.ok_or_else(|| {
        NodeError::Unsupported(format!(
            "{what} is computed from the graph's inputs at run time; tessera needs it known at \
             import time (it unrolls loops)"
        ))
        .into()
    })
}

/// The failure of an invalid node, with `message`.
fn invalid_node(message: impl Into<String>) -> Failure {
    NodeError::Invalid(message.into()).into()
}
