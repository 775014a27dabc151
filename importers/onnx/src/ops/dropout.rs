//! `Dropout`: the input at inference; in training mode with a `seed`, the mask drawn at
//! import time from the seed's MT19937 stream, the generator of onnx's reference (numpy's
//! `RandomState`), so a seeded model drops the same elements every run, as the reference does.

use super::{input, Inputs};
use crate::graph::{invalid, unsupported, Graph, NodeError, NodeResult, Val};
use crate::node::Node;
use rand_mt::Mt;
use tessera::attr::Scalar;
use tessera::exec::tensor::Tensor;
use tessera::types::ElementType;

/// `Dropout`: inputs data, ratio, training_mode. Before opset 12 it has no training mode
/// (opsets 1 and 6 had `is_test`, which exporters only ever set for inference graphs).
pub fn dropout(g: &mut Graph, node: &Node, inputs: &Inputs) -> NodeResult<Vec<Val>> {
    let x = input(inputs, 0)?;
    let number = |g: &Graph, i: usize, what: &str| match inputs.get(i) {
        Some(Some(v)) => g.numbers(v, what).map(|n| n.first().copied()),
        _ => Ok(None),
    };
    let training = number(g, 2, "the training_mode input")?.is_some_and(|t| t != 0.0);
    let ratio = number(g, 1, "the ratio input")?.unwrap_or(0.5);
    let ty = g.ty(&x);
    let mask_ty = ty.with_element(ElementType::I1);
    if !training || ratio == 0.0 {
        return Ok(vec![x, g.splat(Scalar::Bool(true), mask_ty)]);
    }
    if !(0.0..1.0).contains(&ratio) {
        return invalid(format!("ratio {ratio} is outside [0, 1)"));
    }
    let Some(seed) = node.attr("seed").map(|_| node.int("seed", 0)) else {
        return unsupported(
            "Dropout in training mode without a seed (tessera draws the mask at import time, \
             which takes the seed attribute)",
        );
    };
    let count = ty
        .num_elements()
        .filter(|&n| n <= super::CONSTANT_LIMIT)
        .ok_or_else(|| NodeError::Invalid(format!("{ty} is too large a mask")))?;
    let kept = kept_mask(seed, ratio, count as usize);
    let mask = g.constant(Tensor::from_numbers(
        &mask_ty,
        kept.iter().map(|&k| f64::from(u8::from(k))),
    ));
    let scale = g.scalar(1.0 / (1.0 - ratio), ty.element);
    let scaled = g.binary("array.mul", &x, &scale)?;
    let zero = g.scalar(0.0, ty.element);
    let y = g.select(&mask, &scaled, &zero)?;
    Ok(vec![y, mask])
}

/// Which of `count` elements dropout with `ratio` keeps: element `i` when the `i`-th uniform
/// draw of seed `seed`'s stream is at least `ratio`.
fn kept_mask(seed: i64, ratio: f64, count: usize) -> Vec<bool> {
    let mut mt = match u32::try_from(seed) {
        Ok(seed) => Mt::new(seed),
        Err(_) => Mt::new_with_key([seed as u32, (seed >> 32) as u32]),
    };
    (0..count).map(|_| uniform(&mut mt) >= ratio).collect()
}

/// A double uniform in [0, 1) from two 32-bit draws, 53 random bits, as numpy's legacy
/// `random_sample` makes it.
fn uniform(mt: &mut Mt) -> f64 {
    let high = f64::from(mt.next_u32() >> 5);
    let low = f64::from(mt.next_u32() >> 6);
    (high * 67_108_864.0 + low) / 9_007_199_254_740_992.0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Known answers: numpy's `RandomState(0).random_sample(3)` and `RandomState(42)`'s first.
    #[test]
    fn draws_numpy_legacy_stream() {
        let mut mt = Mt::new(0);
        let draws: Vec<f64> = (0..3).map(|_| uniform(&mut mt)).collect();
        assert_eq!(
            draws,
            [0.5488135039273248, 0.7151893663724195, 0.6027633760716439]
        );
        assert_eq!(uniform(&mut Mt::new(42)), 0.3745401188473625);
    }

    #[test]
    fn mask_keeps_draws_at_or_above_ratio() {
        assert_eq!(kept_mask(0, 0.6, 3), [false, true, true]);
        let kept = kept_mask(7, 0.25, 10_000).iter().filter(|&&k| k).count();
        assert!((7_300..7_700).contains(&kept), "{kept} of 10000 kept");
    }
}
