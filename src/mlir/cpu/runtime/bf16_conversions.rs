//! `__truncsfbf2` and `__truncdfbf2`, the f32 → bf16 and f64 → bf16 conversions LLVM calls on
//! CPUs without a bf16 instruction (compiler-rt's names; MLIR's runner-utils libraries have
//! them too, which tessera does not load). Both round to nearest even, directly from the
//! source precision (no double rounding through f32 for f64), and keep NaN a NaN. On x86-64,
//! a bf16 comes back in the low 16 bits of an SSE register, as a float's bits would.

use crate::number::round_to;
use crate::types::ElementType;

/// `__bf16 __truncsfbf2(float)`.
pub(crate) extern "C" fn trunc_f32_to_bf16(value: f32) -> f32 {
    f32::from_bits(u32::from(half::bf16::from_f32(value).to_bits()))
}

/// `__bf16 __truncdfbf2(double)`. (`half` converts through f32, rounding twice near ties;
/// the rounding of `.tsr` literals is correct from f64.)
pub(crate) extern "C" fn trunc_f64_to_bf16(value: f64) -> f32 {
    let rounded = round_to(value, ElementType::BF16);
    f32::from_bits(u32::from(half::bf16::from_f64(rounded).to_bits()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bits(value: f32) -> u16 {
        value.to_bits() as u16
    }

    #[test]
    fn rounds_to_nearest_even_from_the_source_precision() {
        assert_eq!(bits(trunc_f32_to_bf16(1.0)), 0x3F80);
        // 1 + 2^-8 is halfway between bf16 1.0 and 1.0078125: ties to even (1.0).
        assert_eq!(bits(trunc_f32_to_bf16(1.0 + 1.0 / 256.0)), 0x3F80);
        // Just above the tie in f64 (not representable in f32): rounds up, where rounding
        // through f32 would land on the tie and go down.
        assert_eq!(bits(trunc_f64_to_bf16(1.0 + 1.0 / 256.0 + 1e-12)), 0x3F81);
        assert!(half::bf16::from_bits(bits(trunc_f64_to_bf16(f64::NAN))).is_nan());
        assert_eq!(bits(trunc_f32_to_bf16(f32::INFINITY)), 0x7F80);
    }
}
