//! How far a function's reference results move when every float it computes is rounded
//! differently: the noise floor of a comparison. Compiled code rounds in other places than the
//! reference (an f32 accumulator, a fused kernel, a polynomial `exp`), differences of the size
//! of one rounding of the element type per op; a model that amplifies them (a deep bf16
//! network whose activations grow tenfold per layer, then a sigmoid; a `log` of values near
//! zero) turns them into differences far above the type's tolerance, which no compiler could
//! avoid. Re-running the reference with its float inputs and every op's float results moved by
//! one ulp, up or down at random (Monte Carlo arithmetic), and measuring how far the results
//! move tells such a model from a miscompilation.
//!
//! The run is of the decomposed module, whose ops are the ones compiled code computes: a
//! layer norm rounds after its centring, scaling and shift, and a shift that cancels its
//! scaled input to near zero is off by a rounding of the input, not of the result. An op that
//! accumulates ([`OpDef::accumulated_terms`](crate::dialect::OpDef::accumulated_terms): sums,
//! dot products) rounds each of its `n` partial sums, at most at the size of the sum of its
//! terms' magnitudes, in whatever order they are added and in the type they accumulate in (f32
//! for f16 and bf16): roundings of random sign add up to about `sqrt(n)` of them (Higham and
//! Mary, "A new approach to probabilistic rounding error analysis", 2019), so its result moves
//! by `sqrt(n)` ulps of that sum in the accumulator's type, plus the one rounding to its own
//! type. One ulp for a whole sum would miss what a loop that adds 256 positive terms one after
//! another really does (about ten ulps of the sum), as a fuzzed layer norm at -O0 showed.
//!
//! Integer-valued elements are left as they are: they are what exact ops produce (counts,
//! masks, `floor`), which compiled code reproduces exactly, and moving them would turn the
//! discontinuities of the ops that read them (`floor`, comparisons) into a noise floor that
//! hides real errors.

use crate::exec::evaluate::EvalContext;
use crate::exec::interpret::{interpret_adjusting, Evaluated};
use crate::exec::tensor::{significand_bits, Tensor, TensorData};
use crate::ir::Module;
use crate::number::round_to;
use crate::transforms::decompose::decompose;
use crate::types::TensorType;

/// The perturbed runs of the reference: each moves every float input and op result by one
/// ulp, up or down at random, with a seed of its own.
const RUNS: u64 = 2;

/// How an accumulating op's results round: `terms` partial sums per element, each at most at
/// the size of the same element of `sizes` (the sum of its terms' magnitudes).
struct Accumulation {
    sizes: Tensor,
    terms: u64,
}

/// One ulp of `size` in a type with `bits` significant bits.
fn ulp(size: f64, bits: u32) -> f64 {
    2f64.powi(size.log2().floor() as i32 - (bits as i32 - 1))
}

/// `tensor` with every float element that is not an integer moved by one ulp of its type, up
/// or down as `seed`'s stream says (integers and booleans stay); the result of an
/// `accumulation` also by `sqrt(terms)` ulps of its size in the type it accumulates in.
fn perturbed(tensor: &Tensor, accumulation: Option<&Accumulation>, seed: u64) -> Tensor {
    let TensorData::Float(values) = &tensor.data else {
        return tensor.clone();
    };
    let element = tensor.ty.element;
    let (bits, accumulator_bits) = (
        significand_bits(element),
        significand_bits(element.accumulator()),
    );
    let accumulation = accumulation.filter(|a| a.sizes.len() == values.len());
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let moved = values.iter().enumerate().map(|(i, &v)| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        if !v.is_finite() || v == v.trunc() {
            return v;
        }
        let partial_sums = accumulation.map_or(0.0, |a| {
            let size = a.sizes.get_f64(i).abs();
            if size.is_finite() && size > 0.0 {
                (a.terms as f64).sqrt() * ulp(size, accumulator_bits)
            } else {
                0.0
            }
        });
        let step = ulp(v.abs(), bits) + partial_sums;
        round_to(if state & 1 == 0 { v + step } else { v - step }, element)
    });
    Tensor::from_f64(&tensor.ty, moved.collect::<Vec<_>>())
}

/// `tensor` with its float elements replaced by their absolute values.
fn absolute(tensor: &Tensor) -> Tensor {
    match &tensor.data {
        TensorData::Float(values) => Tensor::from_f64(&tensor.ty, values.iter().map(|v| v.abs())),
        _ => tensor.clone(),
    }
}

/// How an accumulating op's results round: its terms per element, and the op evaluated on
/// its operands' absolute values (the sums of its terms' magnitudes); `None` for other ops.
fn accumulations(op: &Evaluated<'_, '_>) -> Option<Vec<Accumulation>> {
    let operand_types: Vec<&TensorType> = op.ctx.operands.iter().map(|t| &t.ty).collect();
    let result_types: Vec<&TensorType> = op.ctx.result_types.iter().collect();
    let terms = op
        .def
        .accumulated_terms(&operand_types, &result_types, op.ctx.attrs)?;
    let absolutes: Vec<Tensor> = op.ctx.operands.iter().map(|t| absolute(t)).collect();
    let operands: Vec<&Tensor> = absolutes.iter().collect();
    let ctx = EvalContext {
        operands: &operands,
        ..*op.ctx
    };
    let sizes = op.def.evaluate(&ctx).ok()?;
    Some(
        sizes
            .into_iter()
            .map(|sizes| Accumulation { sizes, terms })
            .collect(),
    )
}

/// For each result of function `func` of `module` on `inputs` (whose reference results are
/// `reference`), the largest absolute change of an element when the float inputs and every
/// op's float results (of the decomposed module) move by one rounding; `None` when a perturbed
/// run fails (a perturbed value can leave an op's domain).
pub fn sensitivity(
    module: &Module,
    func: usize,
    inputs: &[Tensor],
    reference: &[Tensor],
) -> Option<Vec<f64>> {
    let decomposed = decompose(module).ok()?;
    let mut largest = vec![0.0f64; reference.len()];
    for run in 0..RUNS {
        let moved: Vec<Tensor> = inputs
            .iter()
            .enumerate()
            .map(|(i, t)| perturbed(t, None, run * 1_000_003 + i as u64 + 1))
            .collect();
        let mut op_results = 0u64;
        let mut round_differently = |results: &mut [Tensor], op: &Evaluated<'_, '_>| {
            let accumulations = accumulations(op);
            for (i, result) in results.iter_mut().enumerate() {
                op_results += 1;
                let seed = (run << 32) ^ op_results.wrapping_mul(0x2545_F491);
                let accumulation = accumulations.as_ref().and_then(|a| a.get(i));
                *result = perturbed(result, accumulation, seed);
            }
        };
        let results =
            interpret_adjusting(&decomposed, func, &moved, &mut round_differently).ok()?;
        for ((change, got), want) in largest.iter_mut().zip(&results).zip(reference) {
            for i in 0..got.len().min(want.len()) {
                let (g, w) = (got.get_f64(i), want.get_f64(i));
                if g.is_finite() && w.is_finite() {
                    *change = change.max((g - w).abs());
                }
            }
        }
    }
    Some(largest)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{ElementType, TensorType};

    #[test]
    fn every_element_but_integers_moves_by_one_ulp_of_its_type() {
        let ty = TensorType::new(vec![5], ElementType::BF16);
        let tensor = Tensor::from_f64(&ty, vec![1.5, -3.25, 0.375, 0.0, -256.0]);
        let moved = perturbed(&tensor, None, 7);
        let TensorData::Float(values) = &moved.data else {
            panic!("floats stay floats");
        };
        // bf16 has 8 significant bits: one ulp is 2^-7 at 1.5, 2^-6 at 3.25, 2^-9 at 0.375;
        // the integers 0 and -256 stay.
        for (&got, (want, ulp)) in values.iter().zip([
            (1.5, 2f64.powi(-7)),
            (-3.25, 2f64.powi(-6)),
            (0.375, 2f64.powi(-9)),
            (0.0, 0.0),
            (-256.0, 0.0),
        ]) {
            assert_eq!((got - want).abs(), ulp, "{want} moved to {got}");
        }
    }
}
