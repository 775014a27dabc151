//! Writing tensors as a safetensors file, the format side files have.

use crate::weights::{safetensors_dtype, StoredTensor};
use std::path::Path;

/// One tensor as the safetensors writer sees it.
struct Entry<'t> {
    tensor: &'t StoredTensor,
    shape: Vec<usize>,
}

impl safetensors::View for Entry<'_> {
    fn dtype(&self) -> safetensors::Dtype {
        safetensors_dtype(self.tensor.ty.element)
    }

    fn shape(&self) -> &[usize] {
        &self.shape
    }

    fn data(&self) -> std::borrow::Cow<'_, [u8]> {
        std::borrow::Cow::Borrowed(&self.tensor.bytes)
    }

    fn data_len(&self) -> usize {
        self.tensor.bytes.len()
    }
}

/// Writes `tensors` (key, tensor) to the safetensors file at `path`.
pub fn write_safetensors<'t>(
    path: &Path,
    tensors: impl IntoIterator<Item = (&'t str, &'t StoredTensor)>,
) -> Result<(), String> {
    let bytes = safetensors::serialize(
        tensors.into_iter().map(|(key, tensor)| {
            let shape = tensor.ty.shape.iter().map(|&d| d as usize).collect();
            (key, Entry { tensor, shape })
        }),
        None,
    )
    .map_err(|e| format!("cannot encode '{}': {e}", path.display()))?;
    std::fs::write(path, bytes).map_err(|e| format!("cannot write '{}': {e}", path.display()))
}
