//! Host tensors: a tensor type and its elements in row-major order, floats held in f64.

use crate::attr::same_float;
use crate::number::round_to;
use crate::types::{ElementClass, ElementType, TensorType};

/// The elements of a host tensor, by element class. Float tensors of every width hold f64
/// (already rounded to their type where they came from outside); integers hold i64.
#[derive(Clone, Debug, PartialEq)]
pub enum TensorData {
    /// f16, bf16, f32, f64 elements.
    Float(Vec<f64>),
    /// i8, i32, i64 elements.
    Int(Vec<i64>),
    /// i1 elements.
    Bool(Vec<bool>),
}

impl TensorData {
    /// Number of elements.
    pub fn len(&self) -> usize {
        match self {
            TensorData::Float(v) => v.len(),
            TensorData::Int(v) => v.len(),
            TensorData::Bool(v) => v.len(),
        }
    }

    /// True when there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A tensor on the host: its type and its elements.
#[derive(Clone, Debug, PartialEq)]
pub struct Tensor {
    /// Shape and element type.
    pub ty: TensorType,
    /// Row-major elements, as many as the shape holds.
    pub data: TensorData,
}

impl Tensor {
    /// A tensor of `ty` with every element zero (false).
    pub fn zeros(ty: &TensorType) -> Tensor {
        let n = ty.num_elements().unwrap_or(0) as usize;
        let data = match ty.element.class() {
            ElementClass::Float => TensorData::Float(vec![0.0; n]),
            ElementClass::Int => TensorData::Int(vec![0; n]),
            ElementClass::Bool => TensorData::Bool(vec![false; n]),
        };
        Tensor {
            ty: ty.clone(),
            data,
        }
    }

    /// A float tensor of `ty` holding `values`, each rounded to `ty`'s element type (ties to
    /// even), as compiled code would store them.
    pub fn from_f64(ty: &TensorType, values: impl IntoIterator<Item = f64>) -> Tensor {
        let data = values
            .into_iter()
            .map(|v| round_to(v, ty.element))
            .collect();
        Tensor {
            ty: ty.clone(),
            data: TensorData::Float(data),
        }
    }

    /// A tensor of `ty` holding `values` as elements of its type's class: floats rounded to
    /// the element type, integers truncated toward zero, booleans true where nonzero.
    pub fn from_numbers(ty: &TensorType, values: impl IntoIterator<Item = f64>) -> Tensor {
        let values = values.into_iter();
        let data = match ty.element.class() {
            ElementClass::Float => return Tensor::from_f64(ty, values),
            ElementClass::Int => {
                TensorData::Int(values.map(|v| ty.element.wrap_int(v as i128)).collect())
            }
            ElementClass::Bool => TensorData::Bool(values.map(|v| v != 0.0).collect()),
        };
        Tensor {
            ty: ty.clone(),
            data,
        }
    }

    /// Why the elements do not fit the type, or `None` when they do: the data's class is the
    /// element type's, there are as many elements as the shape holds, floats are values of
    /// the element type and integers are in its range.
    pub fn inconsistency(&self) -> Option<String> {
        let expected = self.ty.num_elements().unwrap_or(u64::MAX);
        let class = match &self.data {
            TensorData::Float(_) => ElementClass::Float,
            TensorData::Int(_) => ElementClass::Int,
            TensorData::Bool(_) => ElementClass::Bool,
        };
        if class != self.ty.element.class() {
            let held = match class {
                ElementClass::Float => "float",
                ElementClass::Int => "integer",
                ElementClass::Bool => "boolean",
            };
            return Some(format!(
                "holds {held} elements, but its type is {}",
                self.ty
            ));
        }
        if self.len() as u64 != expected {
            return Some(format!(
                "holds {} elements, but its type {} has {expected}",
                self.len(),
                self.ty
            ));
        }
        match &self.data {
            TensorData::Float(values) => values
                .iter()
                .position(|&v| !same_float(round_to(v, self.ty.element), v))
                .map(|i| {
                    format!(
                        "has element {i} ({:e}), which is not a value of {}",
                        values[i], self.ty.element
                    )
                }),
            TensorData::Int(values) => {
                let (min, max) = self.ty.element.int_bounds();
                let element = self.ty.element;
                values
                    .iter()
                    .position(|&v| !(min..=max).contains(&element.int_value(v)))
                    .map(|i| {
                        format!(
                            "has element {i} ({}), which is out of range for {}",
                            values[i], self.ty.element
                        )
                    })
            }
            TensorData::Bool(_) => None,
        }
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.data.len()
    }

    /// True when the tensor has no elements.
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// Element `index` (row-major) as f64: booleans are 0 and 1.
    pub fn get_f64(&self, index: usize) -> f64 {
        match &self.data {
            TensorData::Float(v) => v[index],
            TensorData::Int(v) => self.ty.element.int_value(v[index]) as f64,
            TensorData::Bool(v) => f64::from(u8::from(v[index])),
        }
    }

    /// Row-major strides (in elements) of the shape.
    pub fn strides(&self) -> Vec<usize> {
        row_major_strides(&self.ty.shape)
    }
}

/// Significant bits (with the implicit one) of float type `element`: 11 for f16, 8 for bf16,
/// 24 for f32, 53 for f64 (and for the other types), the mantissa and one for the 8- and
/// 4-bit floats.
pub fn significand_bits(element: ElementType) -> u32 {
    if let Some(format) = element.minifloat() {
        return format.mantissa + 1;
    }
    match element {
        ElementType::F16 => 11,
        ElementType::BF16 => 8,
        ElementType::F32 => 24,
        _ => 53,
    }
}

/// Row-major strides, in elements, of `shape`.
pub fn row_major_strides(shape: &[u64]) -> Vec<usize> {
    let mut strides = vec![1usize; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        strides[i] = strides[i + 1] * shape[i + 1] as usize;
    }
    strides
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::ElementType;

    #[test]
    fn zeros_and_strides() {
        let t = Tensor::zeros(&TensorType::new(vec![2, 3, 4], ElementType::I32));
        assert_eq!(t.len(), 24);
        assert_eq!(t.strides(), [12, 4, 1]);
        assert_eq!(t.data, TensorData::Int(vec![0; 24]));
        assert_eq!(row_major_strides(&[]), Vec::<usize>::new());
    }

    #[test]
    fn floats_are_rounded_to_their_type() {
        let ty = TensorType::new(vec![2], ElementType::F16);
        let t = Tensor::from_f64(&ty, [0.1, 65520.0]);
        assert_eq!(
            t.data,
            TensorData::Float(vec![0.0999755859375, f64::INFINITY])
        );
        assert_eq!(t.inconsistency(), None);
    }

    #[test]
    fn inconsistencies_are_named() {
        let f32x2 = TensorType::new(vec![2], ElementType::F32);
        let wrong_class = Tensor {
            ty: f32x2.clone(),
            data: TensorData::Int(vec![1, 2]),
        };
        assert_eq!(
            wrong_class.inconsistency().as_deref(),
            Some("holds integer elements, but its type is tensor<2xf32>")
        );
        let wrong_len = Tensor {
            ty: f32x2.clone(),
            data: TensorData::Float(vec![1.0]),
        };
        assert_eq!(
            wrong_len.inconsistency().as_deref(),
            Some("holds 1 elements, but its type tensor<2xf32> has 2")
        );
        let unrounded = Tensor {
            ty: f32x2,
            data: TensorData::Float(vec![f64::NAN, 0.1]),
        };
        assert_eq!(
            unrounded.inconsistency().as_deref(),
            Some("has element 1 (1e-1), which is not a value of f32")
        );
        let out_of_range = Tensor {
            ty: TensorType::new(vec![1], ElementType::I8),
            data: TensorData::Int(vec![128]),
        };
        assert_eq!(
            out_of_range.inconsistency().as_deref(),
            Some("has element 0 (128), which is out of range for i8")
        );
        assert_eq!(ElementType::I32.int_bounds(), (-2147483648, 2147483647));
        assert_eq!(ElementType::U8.int_bounds(), (0, 255));
        assert_eq!(ElementType::U64.int_value(-1), i128::from(u64::MAX));
        assert_eq!(ElementType::U8.wrap_int(-1), 255);
        assert_eq!(ElementType::I16.wrap_int(40000), 40000 - 65536);
    }

    #[test]
    fn significand_bits_match_the_host_types() {
        assert_eq!(significand_bits(ElementType::F16), 11);
        assert_eq!(significand_bits(ElementType::BF16), 8);
        assert_eq!(significand_bits(ElementType::F32), f32::MANTISSA_DIGITS);
        assert_eq!(significand_bits(ElementType::F64), f64::MANTISSA_DIGITS);
    }
}
