//! Host tensors: a tensor type and its elements in row-major order, floats held in f64.

use crate::types::{ElementClass, TensorType};

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
        Tensor { ty: ty.clone(), data }
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
            TensorData::Int(v) => v[index] as f64,
            TensorData::Bool(v) => f64::from(u8::from(v[index])),
        }
    }

    /// Row-major strides (in elements) of the shape.
    pub fn strides(&self) -> Vec<usize> {
        row_major_strides(&self.ty.shape)
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
}
