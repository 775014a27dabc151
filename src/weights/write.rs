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
        // write_safetensors refuses the types without a dtype before serializing.
        safetensors_dtype(self.tensor.ty.element).unwrap_or(safetensors::Dtype::U8)
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
    let tensors: Vec<(&str, &StoredTensor)> = tensors.into_iter().collect();
    if let Some((key, tensor)) = tensors
        .iter()
        .find(|(_, t)| safetensors_dtype(t.ty.element).is_none())
    {
        return Err(format!(
            "'{key}' is {}: safetensors has no dtype for {} elements (keep it inline)",
            tensor.ty, tensor.ty.element
        ));
    }
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
