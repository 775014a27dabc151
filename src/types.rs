//! Tensor types: element types and static shapes.

use std::fmt;

/// The element type of a tensor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ElementType {
    /// IEEE binary32.
    F32,
    /// IEEE binary64.
    F64,
    /// IEEE binary16.
    F16,
    /// bfloat16.
    BF16,
    /// Boolean.
    I1,
    /// Signed 8-bit integer.
    I8,
    /// Signed 16-bit integer.
    I16,
    /// Signed 32-bit integer.
    I32,
    /// Signed 64-bit integer.
    I64,
    /// Unsigned 8-bit integer.
    U8,
    /// Unsigned 16-bit integer.
    U16,
    /// Unsigned 32-bit integer.
    U32,
    /// Unsigned 64-bit integer.
    U64,
    /// 8-bit float, 4 exponent and 3 mantissa bits, no infinities (storage only).
    F8E4M3FN,
    /// 8-bit float, 4 exponent and 3 mantissa bits, no infinities or negative zero (storage
    /// only).
    F8E4M3FNUZ,
    /// 8-bit float, 5 exponent and 2 mantissa bits, IEEE-like (storage only).
    F8E5M2,
    /// 8-bit float, 5 exponent and 2 mantissa bits, no infinities or negative zero (storage
    /// only).
    F8E5M2FNUZ,
    /// 4-bit float, 2 exponent bits and 1 mantissa bit, numbers only (storage only).
    F4E2M1FN,
    /// 8-bit powers of two with no sign, the scales of the OCP MX formats (storage only).
    F8E8M0FNU,
    /// Signed 4-bit integer (storage only).
    I4,
    /// Unsigned 4-bit integer (storage only).
    U4,
    /// Signed 2-bit integer (storage only).
    I2,
    /// Unsigned 2-bit integer (storage only).
    U2,
}

/// What kind of numbers an element type holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ElementClass {
    /// A floating-point type.
    Float,
    /// An integer type, signed or unsigned.
    Int,
    /// `i1`.
    Bool,
}

impl ElementType {
    /// Every element type, in the order the language reference lists them.
    pub const ALL: [ElementType; 23] = [
        ElementType::F32,
        ElementType::F64,
        ElementType::F16,
        ElementType::BF16,
        ElementType::I1,
        ElementType::I8,
        ElementType::I16,
        ElementType::I32,
        ElementType::I64,
        ElementType::U8,
        ElementType::U16,
        ElementType::U32,
        ElementType::U64,
        ElementType::F8E4M3FN,
        ElementType::F8E4M3FNUZ,
        ElementType::F8E5M2,
        ElementType::F8E5M2FNUZ,
        ElementType::F4E2M1FN,
        ElementType::F8E8M0FNU,
        ElementType::I4,
        ElementType::U4,
        ElementType::I2,
        ElementType::U2,
    ];

    /// The keyword (`f32`, `i1`, ...).
    pub fn name(self) -> &'static str {
        match self {
            ElementType::F32 => "f32",
            ElementType::F64 => "f64",
            ElementType::F16 => "f16",
            ElementType::BF16 => "bf16",
            ElementType::I1 => "i1",
            ElementType::I8 => "i8",
            ElementType::I16 => "i16",
            ElementType::I32 => "i32",
            ElementType::I64 => "i64",
            ElementType::U8 => "ui8",
            ElementType::U16 => "ui16",
            ElementType::U32 => "ui32",
            ElementType::U64 => "ui64",
            ElementType::F8E4M3FN => "f8E4M3FN",
            ElementType::F8E4M3FNUZ => "f8E4M3FNUZ",
            ElementType::F8E5M2 => "f8E5M2",
            ElementType::F8E5M2FNUZ => "f8E5M2FNUZ",
            ElementType::F4E2M1FN => "f4E2M1FN",
            ElementType::F8E8M0FNU => "f8E8M0FNU",
            ElementType::I4 => "i4",
            ElementType::U4 => "ui4",
            ElementType::I2 => "i2",
            ElementType::U2 => "ui2",
        }
    }

    /// Parses a keyword.
    pub fn from_name(name: &str) -> Option<ElementType> {
        ElementType::ALL.into_iter().find(|t| t.name() == name)
    }

    /// Float, int or bool.
    pub fn class(self) -> ElementClass {
        match self {
            ElementType::F32
            | ElementType::F64
            | ElementType::F16
            | ElementType::BF16
            | ElementType::F8E4M3FN
            | ElementType::F8E4M3FNUZ
            | ElementType::F8E5M2
            | ElementType::F8E5M2FNUZ
            | ElementType::F4E2M1FN
            | ElementType::F8E8M0FNU => ElementClass::Float,
            ElementType::I1 => ElementClass::Bool,
            ElementType::I8
            | ElementType::I16
            | ElementType::I32
            | ElementType::I64
            | ElementType::U8
            | ElementType::U16
            | ElementType::U32
            | ElementType::U64
            | ElementType::I4
            | ElementType::U4
            | ElementType::I2
            | ElementType::U2 => ElementClass::Int,
        }
    }

    /// True for the unsigned integer types (`ui2` ... `ui64`).
    pub fn is_unsigned(self) -> bool {
        matches!(
            self,
            ElementType::U8
                | ElementType::U16
                | ElementType::U32
                | ElementType::U64
                | ElementType::U4
                | ElementType::U2
        )
    }

    /// True for the types tensors are stored in but not computed in: the 8- and 4-bit floats
    /// and the 4- and 2-bit integers. Each element takes a byte in memory; only the ops that
    /// declare [`crate::dialect::OpDef::moves_storage_types`] (casts, constants, data
    /// movement) take or make them.
    pub fn is_storage_only(self) -> bool {
        self.minifloat().is_some()
            || matches!(
                self,
                ElementType::I4 | ElementType::U4 | ElementType::I2 | ElementType::U2
            )
    }

    /// The format of an 8- or 4-bit float type.
    pub fn minifloat(self) -> Option<crate::minifloat::MiniFloat> {
        use crate::minifloat::*;
        match self {
            ElementType::F8E4M3FN => Some(F8E4M3FN),
            ElementType::F8E4M3FNUZ => Some(F8E4M3FNUZ),
            ElementType::F8E5M2 => Some(F8E5M2),
            ElementType::F8E5M2FNUZ => Some(F8E5M2FNUZ),
            ElementType::F4E2M1FN => Some(F4E2M1FN),
            ElementType::F8E8M0FNU => Some(F8E8M0FNU),
            _ => None,
        }
    }

    /// The lowest and highest value of this integer type (`i1`: 0 and 1; float types: the
    /// `i64` range).
    pub fn int_bounds(self) -> (i128, i128) {
        let bits = self.bit_width();
        match self.class() {
            ElementClass::Bool => (0, 1),
            ElementClass::Int if self.is_unsigned() => (0, (1i128 << bits) - 1),
            ElementClass::Int => (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1),
            ElementClass::Float => (i64::MIN.into(), i64::MAX.into()),
        }
    }

    /// The number a stored integer of this type stands for. Integers are stored as `i64`:
    /// every type's values as themselves, except `ui64`'s upper half, stored as the `i64`
    /// with the same bits.
    pub fn int_value(self, stored: i64) -> i128 {
        match self {
            ElementType::U64 => i128::from(stored as u64),
            _ => i128::from(stored),
        }
    }

    /// `value` reduced modulo 2^bits into this integer type, stored as `int_value` reads it
    /// (two's complement for signed types).
    pub fn wrap_int(self, value: i128) -> i64 {
        let bits = self.bit_width();
        let low = value as i64;
        match self.class() {
            ElementClass::Bool => low & 1,
            _ if bits == 64 => low,
            _ if self.is_unsigned() => low & ((1i64 << bits) - 1),
            _ => (low << (64 - bits)) >> (64 - bits),
        }
    }

    /// True for floating-point types.
    pub fn is_float(self) -> bool {
        self.class() == ElementClass::Float
    }

    /// The type that sums and products of this type accumulate in: f32 for f16 and bf16
    /// (as XLA and PyTorch do: 8 or 11 bits of mantissa lose a long sum), itself otherwise.
    pub fn accumulator(self) -> ElementType {
        match self {
            ElementType::F16 | ElementType::BF16 => ElementType::F32,
            other => other,
        }
    }

    /// Size of one element in bits.
    pub fn bit_width(self) -> u32 {
        match self {
            ElementType::I1 => 1,
            ElementType::I2 | ElementType::U2 => 2,
            ElementType::I4 | ElementType::U4 | ElementType::F4E2M1FN => 4,
            ElementType::I8
            | ElementType::U8
            | ElementType::F8E4M3FN
            | ElementType::F8E4M3FNUZ
            | ElementType::F8E5M2
            | ElementType::F8E5M2FNUZ
            | ElementType::F8E8M0FNU => 8,
            ElementType::F16 | ElementType::BF16 | ElementType::I16 | ElementType::U16 => 16,
            ElementType::F32 | ElementType::I32 | ElementType::U32 => 32,
            ElementType::F64 | ElementType::I64 | ElementType::U64 => 64,
        }
    }
}

impl fmt::Display for ElementType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A statically shaped tensor type, `tensor<4x8xf32>`; rank 0 is `tensor<f32>`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TensorType {
    /// Extent of each dimension, outermost first.
    pub shape: Vec<u64>,
    /// The element type.
    pub element: ElementType,
}

impl TensorType {
    /// A tensor type of `shape` and `element`.
    pub fn new(shape: Vec<u64>, element: ElementType) -> TensorType {
        TensorType { shape, element }
    }

    /// Number of dimensions.
    pub fn rank(&self) -> usize {
        self.shape.len()
    }

    /// Number of elements, or `None` when it overflows `u64`.
    pub fn num_elements(&self) -> Option<u64> {
        self.shape.iter().try_fold(1u64, |n, &d| n.checked_mul(d))
    }

    /// The same shape with another element type.
    pub fn with_element(&self, element: ElementType) -> TensorType {
        TensorType::new(self.shape.clone(), element)
    }
}

impl fmt::Display for TensorType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("tensor<")?;
        for d in &self.shape {
            write!(f, "{d}x")?;
        }
        write!(f, "{}>", self.element)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prints_like_mlir() {
        let t = TensorType::new(vec![4, 8], ElementType::BF16);
        assert_eq!(t.to_string(), "tensor<4x8xbf16>");
        assert_eq!(
            TensorType::new(vec![], ElementType::I1).to_string(),
            "tensor<i1>"
        );
        assert_eq!(t.num_elements(), Some(32));
        assert_eq!(
            TensorType::new(vec![u64::MAX, 2], ElementType::F32).num_elements(),
            None
        );
    }
}
