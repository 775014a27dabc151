//! Host buffers in the compiled code's memory layout, and the strided memref descriptors
//! (`{allocated, aligned, offset, sizes[r], strides[r]}`) that pass them to it.

pub use crate::exec::bytes::element_bytes;
use crate::exec::bytes::{decode, encode_into};
use crate::exec::tensor::{row_major_strides, Tensor};
use crate::types::TensorType;
use std::alloc::{alloc_zeroed, dealloc, Layout};

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
        encode_into(tensor, buffer.bytes_mut());
        Some(buffer)
    }

    /// The tensor type of the buffer.
    pub fn ty(&self) -> &TensorType {
        &self.ty
    }

    /// The elements as a host tensor.
    pub fn to_tensor(&self) -> Tensor {
        decode(&self.ty, self.bytes())
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
    use crate::exec::tensor::TensorData;
    use crate::types::{ElementClass, ElementType};

    #[test]
    fn round_trips_every_element_type() {
        for element in ElementType::ALL {
            let ty = TensorType::new(vec![2, 2], element);
            let data = match element.class() {
                ElementClass::Float => TensorData::Float(
                    [1.5, -2.0, 0.5, 4.0]
                        .map(|v| crate::number::round_to(v, element))
                        .to_vec(),
                ),
                ElementClass::Int => {
                    TensorData::Int([1, -2, 100, -128].map(|v| element.wrap_int(v)).to_vec())
                }
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
