//! Tensors kept outside the text: `.tsr` refers to them with `external<"file", "key">`, and a
//! [`TensorStore`] gives their types and bytes to the verifier. Models imported from other
//! formats keep their weights binary this way (a safetensors side file) instead of as decimal
//! text.

mod confine;
mod memory;
mod side_files;
mod write;

pub use confine::confined;
pub use memory::MemoryStore;
pub use side_files::SideFiles;
pub use write::write_safetensors;

use crate::types::{ElementType, TensorType};
use std::sync::Arc;

/// A tensor from a store: its type and its elements as little-endian bytes in row-major
/// order (`i1` a byte each), exactly as many as the type has.
#[derive(Clone, Debug)]
pub struct StoredTensor {
    /// The tensor's type.
    pub ty: TensorType,
    /// Its elements' bytes.
    pub bytes: Arc<[u8]>,
}

/// Where `external<"file", "key">` literals find their tensors.
pub trait TensorStore {
    /// The tensor named `key` in side file `file` (as written in the literal), or why it
    /// cannot be had (one sentence, for a diagnostic at the literal).
    fn tensor(&self, file: &str, key: &str) -> Result<StoredTensor, String>;
}

/// A store that has no tensors: for text that must not refer to any (every lookup fails).
pub struct NoTensors;

impl TensorStore for NoTensors {
    fn tensor(&self, file: &str, _key: &str) -> Result<StoredTensor, String> {
        Err(format!(
            "no side file can be read here, so '{file}' cannot be either"
        ))
    }
}

/// The safetensors dtype of `element` (`F32`, `BOOL`, ...); none for the 4- and 2-bit types,
/// which safetensors packs where tessera keeps a byte per element (they stay inline).
pub fn safetensors_dtype(element: ElementType) -> Option<safetensors::Dtype> {
    use safetensors::Dtype;
    Some(match element {
        ElementType::F32 => Dtype::F32,
        ElementType::F64 => Dtype::F64,
        ElementType::F16 => Dtype::F16,
        ElementType::BF16 => Dtype::BF16,
        ElementType::I1 => Dtype::BOOL,
        ElementType::I8 => Dtype::I8,
        ElementType::I16 => Dtype::I16,
        ElementType::I32 => Dtype::I32,
        ElementType::I64 => Dtype::I64,
        ElementType::U8 => Dtype::U8,
        ElementType::U16 => Dtype::U16,
        ElementType::U32 => Dtype::U32,
        ElementType::U64 => Dtype::U64,
        ElementType::F8E4M3FN => Dtype::F8_E4M3,
        ElementType::F8E4M3FNUZ => Dtype::F8_E4M3FNUZ,
        ElementType::F8E5M2 => Dtype::F8_E5M2,
        ElementType::F8E5M2FNUZ => Dtype::F8_E5M2FNUZ,
        ElementType::F8E8M0FNU => Dtype::F8_E8M0,
        ElementType::F4E2M1FN
        | ElementType::I4
        | ElementType::U4
        | ElementType::I2
        | ElementType::U2 => return None,
    })
}

/// The tessera element type of safetensors dtype `dtype`, when there is one.
pub fn element_of_dtype(dtype: safetensors::Dtype) -> Option<ElementType> {
    ElementType::ALL
        .into_iter()
        .find(|&e| safetensors_dtype(e) == Some(dtype))
}
