//! Loss ONNX ops: `NegativeLogLikelihoodLoss` and `SoftmaxCrossEntropyLoss` (the first on
//! `LogSoftmax` of the scores), built from `array.take_along` (each sample's class), a class
//! weight by `array.gather`, masks for `ignore_index`, and reductions.

use super::{input, Inputs};
use crate::graph::{invalid, Graph, NodeResult, Val};
use crate::node::Node;
use tessera::attr::Attribute;
use tessera::types::ElementClass;

/// `NegativeLogLikelihoodLoss(input, target, weight?)`.
pub fn negative_log_likelihood(
    g: &mut Graph,
    node: &Node,
    inputs: &Inputs,
) -> NodeResult<Vec<Val>> {
    let (x, target) = (input(inputs, 0)?, input(inputs, 1)?);
    let weight = inputs.get(2).cloned().flatten();
    Ok(vec![nll(g, node, &x, &target, weight.as_ref())?])
}

/// `SoftmaxCrossEntropyLoss(scores, labels, weights?)`: the loss, and the log-probabilities.
pub fn softmax_cross_entropy(g: &mut Graph, node: &Node, inputs: &Inputs) -> NodeResult<Vec<Val>> {
    let (scores, labels) = (input(inputs, 0)?, input(inputs, 1)?);
    let weight = inputs.get(2).cloned().flatten();
    if g.ty(&scores).rank() < 2 {
        return invalid(format!("scores are {}, not [N, C, ...]", g.ty(&scores)));
    }
    let log_prob = g.op(
        "nn.log_softmax",
        std::slice::from_ref(&scores),
        &[("axis", Attribute::Int(1))],
        None,
    )?;
    let loss = nll(g, node, &log_prob, &labels, weight.as_ref())?;
    Ok(vec![loss, log_prob])
}

/// `-x[n, target[n, d...], d...] * weight[target[n, d...]]`, zero where the target is
/// `ignore_index`, reduced as `reduction` says (`mean` divides by the weights' sum).
fn nll(g: &mut Graph, node: &Node, x: &Val, target: &Val, weight: Option<&Val>) -> NodeResult<Val> {
    let (x_ty, t_ty) = (g.ty(x), g.ty(target));
    if x_ty.rank() < 2 || x_ty.element.class() != ElementClass::Float {
        return invalid(format!("the input is {x_ty}, not a float [N, C, ...]"));
    }
    let mut expected = x_ty.shape.clone();
    expected.remove(1);
    if t_ty.shape != expected || t_ty.element.class() != ElementClass::Int {
        return invalid(format!(
            "the target is {t_ty}, not integers of shape {expected:?} (the input {x_ty} without its class axis)"
        ));
    }
    let reduction = node.string("reduction", "mean");
    if !["none", "sum", "mean"].contains(&reduction.as_str()) {
        return invalid(format!(
            "reduction is '{reduction}', not 'none', 'sum' or 'mean'"
        ));
    }
    let element = x_ty.element;
    let mut picks_shape = t_ty.shape.clone();
    picks_shape.insert(1, 1);
    let picks = g.reshape(target, picks_shape)?;
    let picked = g.op(
        "array.take_along",
        &[x.clone(), picks],
        &[("axis", Attribute::Int(1))],
        None,
    )?;
    let picked = g.reshape(&picked, t_ty.shape.clone())?;
    let mut loss = g.unary("array.neg", &picked)?;
    let mut weights = match weight {
        Some(w) => {
            let w = g.op(
                "array.gather",
                &[w.clone(), target.clone()],
                &[("axis", Attribute::Int(0))],
                None,
            )?;
            loss = g.binary("array.mul", &loss, &w)?;
            Some(w)
        }
        None => None,
    };
    if let Some(ignored) = node.attr("ignore_index").map(|a| a.i) {
        let ignored = g.scalar(ignored as f64, t_ty.element);
        let kept = g.compare(target, &ignored, "ne")?;
        let zero = g.scalar(0.0, element);
        loss = g.select(&kept, &loss, &zero)?;
        let one = g.scalar(1.0, element);
        let w = weights.unwrap_or(one);
        weights = Some(g.select(&kept, &w, &zero)?);
    }
    let all: Vec<i64> = (0..t_ty.rank() as i64).collect();
    Ok(match (reduction.as_str(), weights) {
        ("none", _) => loss,
        ("sum", _) => g.reduce("array.reduce_sum", &loss, &all, false)?,
        (_, None) => g.reduce("array.reduce_mean", &loss, &all, false)?,
        (_, Some(w)) => {
            let w = g.broadcast(&w, t_ty.shape.clone())?;
            let total = g.reduce("array.reduce_sum", &loss, &all, false)?;
            let weight_sum = g.reduce("array.reduce_sum", &w, &all, false)?;
            g.binary("array.div", &total, &weight_sum)?
        }
    })
}
