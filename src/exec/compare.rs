//! Agreement of two tensors within a tolerance stated per element type: how compiled results
//! are checked against the reference interpreter.
//!
//! The error is measured norm-wise: an element agrees when `|got - want| <= abs + rel * M`,
//! with `M` the largest magnitude in the expected tensor. Compiled code accumulates in the
//! storage precision (an f32 matmul adds in f32) while the reference computes in f64, so an
//! element that is a small difference of large terms carries the rounding error of those
//! terms: relative to itself it can be large, relative to the tensor's scale it is not. The
//! tolerance of a computation is that of the least precise float type it uses.

use crate::exec::tensor::{Tensor, TensorData};
use crate::ir::{Module, OpKind};
use crate::types::{ElementClass, ElementType};
use std::fmt;

/// An element agrees when `|got - want| <= abs + rel * M`, `M` the expected tensor's largest
/// magnitude (both NaN, or both the same infinity, agree too).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Tolerance {
    /// Absolute part.
    pub abs: f64,
    /// Relative part.
    pub rel: f64,
}

impl Tolerance {
    /// The tolerance for results of `element` type: f32 relative 1e-4 or absolute 1e-5;
    /// f64 1e-10 / 1e-12; f16, bf16 and the 8- and 4-bit floats from their precision;
    /// integers and booleans exact.
    pub fn for_element(element: ElementType) -> Tolerance {
        let (abs, rel) = match element {
            ElementType::F32 => (1e-5, 1e-4),
            ElementType::F64 => (1e-12, 1e-10),
            ElementType::F16 => (1e-3, 1e-2),
            ElementType::BF16 => (1e-2, 2e-2),
            // One step of the mantissa: inputs a rounding apart may round to neighbours.
            other => match other.minifloat() {
                Some(format) => (0.0, 0.5f64.powi(format.mantissa as i32)),
                None => (0.0, 0.0),
            },
        };
        Tolerance { abs, rel }
    }
}

impl Tolerance {
    /// The loosest tolerance of the float types used anywhere in function `func` of `module`
    /// (its values and those of the functions it calls); exact when it uses none.
    pub fn for_function(module: &Module, func: usize) -> Tolerance {
        let mut seen = vec![false; module.funcs.len()];
        let mut pending = vec![func];
        let mut tolerance = Tolerance { abs: 0.0, rel: 0.0 };
        while let Some(f) = pending.pop() {
            if std::mem::replace(&mut seen[f], true) {
                continue;
            }
            for value in &module.funcs[f].values {
                let t = Tolerance::for_element(value.ty.element);
                tolerance = Tolerance {
                    abs: tolerance.abs.max(t.abs),
                    rel: tolerance.rel.max(t.rel),
                };
            }
            pending.extend(module.funcs[f].ops.iter().filter_map(|op| match op.kind {
                OpKind::Call(callee) => Some(callee),
                OpKind::Dialect(_) => None,
            }));
        }
        tolerance
    }
}

impl fmt::Display for Tolerance {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.abs == 0.0 && self.rel == 0.0 {
            f.write_str("exact")
        } else {
            write!(f, "abs {:.0e} + rel {:.0e}", self.abs, self.rel)
        }
    }
}

/// How two tensors compare.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Comparison {
    /// Largest absolute difference over finite pairs.
    pub max_abs: f64,
    /// Largest difference relative to the expected tensor's largest magnitude.
    pub max_rel: f64,
    /// Whether every element agrees (and the types match).
    pub pass: bool,
}

/// Compares `got` with `want` element by element.
pub fn compare(got: &Tensor, want: &Tensor, tolerance: Tolerance) -> Comparison {
    let mut result = Comparison {
        max_abs: 0.0,
        max_rel: 0.0,
        pass: got.ty == want.ty && got.len() == want.len(),
    };
    if !result.pass {
        return result;
    }
    if let (TensorData::Int(g), TensorData::Int(w)) = (&got.data, &want.data) {
        // Integers compare exactly, in i64 (f64 would merge values beyond 2^53).
        result.pass = g == w;
        result.max_abs = g
            .iter()
            .zip(w)
            .map(|(a, b)| a.abs_diff(*b) as f64)
            .fold(0.0, f64::max);
        return result;
    }
    let exact = got.ty.element.class() != ElementClass::Float;
    let scale = (0..want.len())
        .map(|i| want.get_f64(i).abs())
        .filter(|v| v.is_finite())
        .fold(0.0, f64::max);
    for i in 0..got.len() {
        let (g, w) = (got.get_f64(i), want.get_f64(i));
        if g.is_nan() || w.is_nan() || g.is_infinite() || w.is_infinite() {
            result.pass &= (g.is_nan() && w.is_nan()) || g == w;
            continue;
        }
        let diff = (g - w).abs();
        result.max_abs = result.max_abs.max(diff);
        if scale > 0.0 {
            result.max_rel = result.max_rel.max(diff / scale);
        }
        result.pass &= if exact {
            diff == 0.0
        } else {
            diff <= tolerance.abs + tolerance.rel * scale
        };
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::TensorType;

    fn f32s(values: Vec<f64>) -> Tensor {
        Tensor {
            ty: TensorType::new(vec![values.len() as u64], ElementType::F32),
            data: TensorData::Float(values),
        }
    }

    #[test]
    fn tolerance_decides() {
        let t = Tolerance::for_element(ElementType::F32);
        assert!(
            compare(
                &f32s(vec![1.0, f64::NAN]),
                &f32s(vec![1.00005, f64::NAN]),
                t
            )
            .pass
        );
        assert!(!compare(&f32s(vec![1.0]), &f32s(vec![1.001]), t).pass);
        assert!(!compare(&f32s(vec![f64::INFINITY]), &f32s(vec![1.0]), t).pass);
        let c = compare(&f32s(vec![2.0]), &f32s(vec![1.0]), t);
        assert_eq!((c.max_abs, c.max_rel), (1.0, 1.0));
        // Norm-wise: a small element carries the error of the tensor's scale.
        assert!(compare(&f32s(vec![100.0, 0.001]), &f32s(vec![100.0, 0.0015]), t).pass);
        assert!(!compare(&f32s(vec![100.0, 0.001]), &f32s(vec![100.0, 0.02]), t).pass);
        let i64s = |v: i64| Tensor {
            ty: TensorType::new(vec![1], ElementType::I64),
            data: TensorData::Int(vec![v]),
        };
        let exact = Tolerance::for_element(ElementType::I64);
        assert!(!compare(&i64s(9007199254740993), &i64s(9007199254740992), exact).pass);
    }
}
