//! Tensors as the bytes compiled code reads and writes, on the CPU and the GPU alike: the
//! elements in row-major order, little-endian, each in its element type (`i1` and the
//! storage-only types a byte each: the 8- and 4-bit floats' codes, the 4- and 2-bit integers
//! sign- or zero-extended).

use crate::attr::Scalar;
use crate::exec::tensor::{Tensor, TensorData};
use crate::types::{ElementClass, ElementType, TensorType};
use half::{bf16, f16};

/// Bytes one element of `element` occupies in memory (`i1` takes a byte).
pub fn element_bytes(element: ElementType) -> usize {
    (element.bit_width() as usize).div_ceil(8)
}

/// Writes `tensor`'s elements into `bytes` (as long as the tensor's elements take).
pub fn encode_into(tensor: &Tensor, bytes: &mut [u8]) {
    let element = tensor.ty.element;
    if let (ElementType::F32, TensorData::Float(values)) = (element, &tensor.data) {
        // The common case, without the per-element dispatch below.
        for (chunk, value) in bytes.chunks_exact_mut(4).zip(values) {
            chunk.copy_from_slice(&(*value as f32).to_le_bytes());
        }
        return;
    }
    let width = element_bytes(element);
    for (i, chunk) in bytes.chunks_exact_mut(width).enumerate() {
        let value = tensor.get_f64(i);
        match (element, element.class(), &tensor.data) {
            (ElementType::F32, ..) => chunk.copy_from_slice(&(value as f32).to_le_bytes()),
            (ElementType::F64, ..) => chunk.copy_from_slice(&value.to_le_bytes()),
            (ElementType::F16, ..) => chunk.copy_from_slice(&f16::from_f64(value).to_le_bytes()),
            (ElementType::BF16, ..) => chunk.copy_from_slice(&bf16::from_f64(value).to_le_bytes()),
            (_, ElementClass::Float, _) if element.minifloat().is_some() => {
                chunk[0] = element.minifloat().map_or(0, |f| f.encode(value))
            }
            (_, ElementClass::Int, TensorData::Int(v)) => {
                chunk.copy_from_slice(&v[i].to_le_bytes()[..width])
            }
            (_, ElementClass::Int, _) => {
                chunk.copy_from_slice(&(value as i64).to_le_bytes()[..width])
            }
            _ => chunk[0] = u8::from(value != 0.0),
        }
    }
}

/// `tensor`'s elements as bytes.
pub fn encode(tensor: &Tensor) -> Vec<u8> {
    let count = tensor.ty.num_elements().unwrap_or(0) as usize;
    let mut bytes = vec![0; count * element_bytes(tensor.ty.element)];
    encode_into(tensor, &mut bytes);
    bytes
}

/// The tensor of type `ty` whose elements `bytes` holds.
pub fn decode(ty: &TensorType, bytes: &[u8]) -> Tensor {
    let element = ty.element;
    let chunks = bytes.chunks_exact(element_bytes(element));
    let data = match element.class() {
        ElementClass::Float if element == ElementType::F32 => TensorData::Float(
            chunks
                .map(|c| f64::from(f32::from_le_bytes([c[0], c[1], c[2], c[3]])))
                .collect(),
        ),
        ElementClass::Float => TensorData::Float(chunks.map(|c| read_float(element, c)).collect()),
        ElementClass::Int => TensorData::Int(chunks.map(|c| read_int(element, c)).collect()),
        ElementClass::Bool => TensorData::Bool(chunks.map(|c| c[0] & 1 != 0).collect()),
    };
    Tensor {
        ty: ty.clone(),
        data,
    }
}

/// Element `index` of the `element`-typed elements `bytes` holds, as a literal element.
pub fn scalar_at(element: ElementType, bytes: &[u8], index: usize) -> Scalar {
    let width = element_bytes(element);
    let chunk = &bytes[index * width..(index + 1) * width];
    match element.class() {
        ElementClass::Float => Scalar::Float(read_float(element, chunk)),
        ElementClass::Int => Scalar::Int(read_int(element, chunk)),
        ElementClass::Bool => Scalar::Bool(chunk[0] & 1 != 0),
    }
}

/// The float one element's little-endian bytes hold.
fn read_float(element: ElementType, c: &[u8]) -> f64 {
    if let Some(format) = element.minifloat() {
        return format.decode(c[0]);
    }
    match element {
        ElementType::F32 => f64::from(f32::from_le_bytes([c[0], c[1], c[2], c[3]])),
        ElementType::F16 => f16::from_le_bytes([c[0], c[1]]).to_f64(),
        ElementType::BF16 => bf16::from_le_bytes([c[0], c[1]]).to_f64(),
        _ => f64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]),
    }
}

/// The integer one element's little-endian bytes hold, as `element` stores it (signed
/// types sign-extended from their width, unsigned ones zero-extended).
fn read_int(element: ElementType, c: &[u8]) -> i64 {
    let mut bytes = [0; 8];
    bytes[..c.len()].copy_from_slice(c);
    element.wrap_int(i128::from(i64::from_le_bytes(bytes)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_element_type_round_trips() {
        for element in ElementType::ALL {
            let ty = TensorType::new(vec![3], element);
            let values = match element.class() {
                ElementClass::Float => vec![1.5, -0.25, 3.0],
                ElementClass::Int => {
                    let (low, high) = element.int_bounds();
                    vec![high.min(250) as f64, 0.0, low.max(-4) as f64]
                }
                ElementClass::Bool => vec![1.0, 0.0, 1.0],
            };
            let tensor = Tensor::from_f64(&ty, values);
            let bytes = encode(&tensor);
            assert_eq!(bytes.len(), 3 * element_bytes(element));
            let decoded = decode(&ty, &bytes);
            let same = (0..3).all(|i| decoded.get_f64(i) == tensor.get_f64(i));
            assert!(same, "{element:?}: {tensor:?} came back as {decoded:?}");
        }
    }

    #[test]
    fn f64_values_become_their_nearest_f32() {
        let ty = TensorType::new(vec![3], ElementType::F32);
        let tensor = Tensor::from_f64(&ty, vec![0.1, -1e40, 3.0]);
        let bytes = encode(&tensor);
        assert_eq!(bytes[..4], 0.1f32.to_le_bytes());
        assert_eq!(bytes[4..8], f32::NEG_INFINITY.to_le_bytes());
        assert_eq!(bytes[8..], 3.0f32.to_le_bytes());
        assert_eq!(decode(&ty, &bytes).get_f64(0), f64::from(0.1f32));
    }
}
