//! Deterministic pseudo-random tensors for tests and benchmarks: the same seed gives the same
//! tensor on every platform.

use crate::exec::tensor::{significand_bits, Tensor, TensorData};
use crate::number::round_to;
use crate::types::{ElementClass, ElementType, TensorType};

/// SplitMix64 (Steele, Lea and Flood, 2014): a 64-bit state advanced by a constant and mixed
/// by two multiply-xorshift rounds. Small, fast and fully specified by integer arithmetic.
struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// A tensor of `ty` with pseudo-random elements drawn from `seed`, one draw per element in
/// row-major order.
///
/// - Floats are uniform in `[-1, 1)` on the grid of multiples of `2^(1-p)`, with `p` the
///   type's significant bits (2^-52 for f64, 2^-23 for f32, 2^-10 for f16, 2^-7 for bf16):
///   every grid point is a value of the type, so rounding to it changes nothing, and 1 is
///   never reached (rounding a finer uniform draw could give 1).
/// - Unsigned float formats (`f8E8M0FNU`'s powers of two) are uniform in 2^-8 ... 2^-1.
/// - Integers are uniform in `-4..=4`, unsigned ones in `0..=8` (products of a few stay
///   small), cut to the 4- and 2-bit types' ranges.
/// - Booleans are a fair coin.
///
/// A tensor too large to count (more than `u64::MAX` elements) comes back empty.
pub fn random_tensor(ty: &TensorType, seed: u64) -> Tensor {
    let n = ty.num_elements().unwrap_or(0) as usize;
    let mut rng = SplitMix64 { state: seed };
    let data = match ty.element {
        ElementType::I1 => TensorData::Bool((0..n).map(|_| rng.next() >> 63 == 1).collect()),
        element if element.class() == ElementClass::Int => {
            let (min, max) = element.int_bounds();
            let low = if element.is_unsigned() {
                0
            } else {
                (-4).max(min as i64)
            };
            let count = 9.min(max - i128::from(low) + 1) as u128;
            TensorData::Int(
                (0..n)
                    .map(|_| ((u128::from(rng.next()) * count) >> 64) as i64 + low)
                    .collect(),
            )
        }
        element if element.minifloat().is_some_and(|f| !f.signed()) => TensorData::Float(
            (0..n)
                .map(|_| 2f64.powi(-1 - (rng.next() >> 61) as i32))
                .collect(),
        ),
        element => {
            let p = significand_bits(element);
            let step = 2f64.powi(1 - p as i32);
            TensorData::Float(
                (0..n)
                    .map(|_| {
                        let k = rng.next() >> (64 - p);
                        round_to(k as f64 * step - 1.0, element)
                    })
                    .collect(),
            )
        }
    };
    Tensor {
        ty: ty.clone(),
        data,
    }
}

/// Deterministic inputs for every parameter of `func`: parameter `i` from seed `first + i`.
pub fn random_inputs(func: &crate::ir::Func, first: u64) -> Vec<Tensor> {
    func.param_types()
        .enumerate()
        .map(|(i, ty)| random_tensor(ty, first + i as u64))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitmix64_matches_the_reference_sequence() {
        // The first outputs of the reference implementation seeded with 1234567.
        let mut rng = SplitMix64 { state: 1234567 };
        let expected = [
            6457827717110365317,
            3203168211198807973,
            9817491932198370423,
            4593380528125082431,
            16408922859458223821,
        ];
        for value in expected {
            assert_eq!(rng.next(), value);
        }
    }

    #[test]
    fn same_seed_same_tensor() {
        let ty = TensorType::new(vec![3, 4], ElementType::F32);
        assert_eq!(random_tensor(&ty, 7), random_tensor(&ty, 7));
        assert_ne!(random_tensor(&ty, 7), random_tensor(&ty, 8));
        // Pinned values: a change of generator or mapping shows here.
        let small = random_tensor(&TensorType::new(vec![3], ElementType::I32), 1234567);
        assert_eq!(small.data, TensorData::Int(vec![-1, -3, 0]));
    }

    #[test]
    fn values_are_in_range_and_of_their_type() {
        for element in ElementType::ALL {
            let t = random_tensor(&TensorType::new(vec![64, 64], element), 42);
            assert_eq!(t.inconsistency(), None, "{element}");
            match &t.data {
                TensorData::Float(v) => {
                    assert!(v.iter().all(|&x| (-1.0..1.0).contains(&x)), "{element}");
                    let signed = element.minifloat().is_none_or(|f| f.signed());
                    assert!(!signed || v.iter().any(|&x| x <= -0.5), "{element}");
                    assert!(v.iter().any(|&x| x >= 0.5), "{element}");
                }
                TensorData::Int(v) => {
                    let (min, max) = element.int_bounds();
                    let low = if element.is_unsigned() {
                        0
                    } else {
                        (-4).max(min as i64)
                    };
                    let high = (i128::from(low) + 8).min(max) as i64;
                    assert!(v.iter().all(|x| (low..=high).contains(x)), "{element}");
                    for value in low..=high {
                        assert!(v.contains(&value), "{element} never gives {value}");
                    }
                }
                TensorData::Bool(v) => {
                    let heads = v.iter().filter(|&&b| b).count();
                    assert!((1800..2300).contains(&heads), "{heads} of 4096");
                }
            }
        }
        let scalar = random_tensor(&TensorType::new(vec![], ElementType::F64), 0);
        assert_eq!(scalar.len(), 1);
        assert!(random_tensor(&TensorType::new(vec![0, 5], ElementType::I8), 0).is_empty());
    }
}
