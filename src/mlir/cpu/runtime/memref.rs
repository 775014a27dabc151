//! Host buffers in the compiled code's memory layout, and the strided memref descriptors
//! (`{allocated, aligned, offset, sizes[r], strides[r]}`) that pass them to it.

use crate::exec::tensor::{row_major_strides, Tensor, TensorData};
use crate::types::{ElementClass, ElementType, TensorType};
use half::{bf16, f16};
use std::alloc::{alloc_zeroed, dealloc, Layout};

/// Bytes one element of `element` occupies in memory (`i1` takes a byte).
pub fn element_bytes(element: ElementType) -> usize {
    (element.bit_width() as usize).div_ceil(8)
}

/// A 64-byte aligned buffer holding a tensor's elements in row-major order.
pub struct HostBuffer {
    ptr: *mut u8,
    layout: Layout,
    ty: TensorType,
}

impl HostBuffer {
    /// A zeroed buffer for a tensor of `ty`; `None` when it cannot be allocated.
    pub fn zeroed(ty: &TensorType) -> Option<HostBuffer> {
        let count = usize::try_from(ty.num_elements()?).ok()?;
        let bytes = count.checked_mul(element_bytes(ty.element))?;
        let layout = Layout::from_size_align(bytes.max(1), 64).ok()?;
        // SAFETY: the layout has a non-zero size.
        let ptr = unsafe { alloc_zeroed(layout) };
        (!ptr.is_null()).then(|| HostBuffer {
            ptr,
            layout,
            ty: ty.clone(),
        })
    }

    /// A buffer holding `tensor`'s elements.
    pub fn from_tensor(tensor: &Tensor) -> Option<HostBuffer> {
        let mut buffer = HostBuffer::zeroed(&tensor.ty)?;
        let element = tensor.ty.element;
        let width = element_bytes(element);
        let bytes = buffer.bytes_mut();
        for (i, chunk) in bytes.chunks_exact_mut(width).enumerate() {
            let value = tensor.get_f64(i);
            match (element, &tensor.data) {
                (ElementType::F32, _) => chunk.copy_from_slice(&(value as f32).to_le_bytes()),
                (ElementType::F64, _) => chunk.copy_from_slice(&value.to_le_bytes()),
                (ElementType::F16, _) => chunk.copy_from_slice(&f16::from_f64(value).to_le_bytes()),
                (ElementType::BF16, _) => {
                    chunk.copy_from_slice(&bf16::from_f64(value).to_le_bytes())
                }
                (_, TensorData::Int(v)) => chunk.copy_from_slice(&v[i].to_le_bytes()[..width]),
                (_, _) => chunk[0] = u8::from(value != 0.0),
            }
        }
        Some(buffer)
    }

    /// The tensor type of the buffer.
    pub fn ty(&self) -> &TensorType {
        &self.ty
    }

    /// The elements as a host tensor.
    pub fn to_tensor(&self) -> Tensor {
        let element = self.ty.element;
        let width = element_bytes(element);
        let chunks = self.bytes().chunks_exact(width);
        let data = match element.class() {
            ElementClass::Float => TensorData::Float(
                chunks
                    .map(|c| match element {
                        ElementType::F32 => f64::from(f32::from_le_bytes([c[0], c[1], c[2], c[3]])),
                        ElementType::F16 => f16::from_le_bytes([c[0], c[1]]).to_f64(),
                        ElementType::BF16 => bf16::from_le_bytes([c[0], c[1]]).to_f64(),
                        _ => f64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]),
                    })
                    .collect(),
            ),
            ElementClass::Int => TensorData::Int(
                chunks
                    .map(|c| {
                        // Sign-extend from the element's width.
                        let mut bytes = if c[width - 1] & 0x80 != 0 {
                            [0xff; 8]
                        } else {
                            [0; 8]
                        };
                        bytes[..width].copy_from_slice(c);
                        i64::from_le_bytes(bytes)
                    })
                    .collect(),
            ),
            ElementClass::Bool => TensorData::Bool(chunks.map(|c| c[0] & 1 != 0).collect()),
        };
        Tensor {
            ty: self.ty.clone(),
            data,
        }
    }

    fn byte_len(&self) -> usize {
        self.ty.num_elements().unwrap_or(0) as usize * element_bytes(self.ty.element)
    }

    fn bytes(&self) -> &[u8] {
        // SAFETY: `ptr` points to `layout.size() >= byte_len()` initialized bytes owned by self.
        unsafe { std::slice::from_raw_parts(self.ptr, self.byte_len()) }
    }

    fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in `bytes`, and `&mut self` makes this the only reference.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.byte_len()) }
    }

    /// The buffer's strided memref descriptor: allocated and aligned pointers, offset 0, the
    /// sizes, and row-major strides, each one 64-bit word.
    pub fn descriptor(&self) -> Vec<i64> {
        let mut words = vec![self.ptr as i64, self.ptr as i64, 0];
        words.extend(self.ty.shape.iter().map(|&d| d as i64));
        words.extend(row_major_strides(&self.ty.shape).iter().map(|&s| s as i64));
        words
    }
}

impl Drop for HostBuffer {
    fn drop(&mut self) {
        // SAFETY: `ptr` came from `alloc_zeroed(layout)` and is freed only here.
        unsafe { dealloc(self.ptr, self.layout) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_every_element_type() {
        for element in ElementType::ALL {
            let ty = TensorType::new(vec![2, 2], element);
            let data = match element.class() {
                ElementClass::Float => TensorData::Float(vec![1.5, -2.0, 0.25, 8.0]),
                ElementClass::Int => TensorData::Int(vec![1, -2, 100, -128]),
                ElementClass::Bool => TensorData::Bool(vec![true, false, false, true]),
            };
            let tensor = Tensor {
                ty: ty.clone(),
                data,
            };
            let buffer = HostBuffer::from_tensor(&tensor).expect("allocates");
            assert_eq!(buffer.to_tensor(), tensor, "{element}");
            assert_eq!(buffer.descriptor()[2..], [0, 2, 2, 2, 1]);
        }
    }
}
