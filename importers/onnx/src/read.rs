//! Reading an ONNX model file: the protobuf decoded, and every initializer's external data
//! read into it from files that must lie inside the model's folder (a model names its data
//! files, and a model from anywhere must not make tessera read `/etc/shadow` or
//! `../../secrets`).

use crate::proto::{DataLocation, ModelProto, TensorProto};
use crate::tensor::tensor_of;
use prost::Message;
use std::path::{Path, PathBuf};
use tessera::exec::tensor::Tensor;
use tessera::weights::confined;

/// Why a model could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The model file (or a data file) could not be read.
    #[error("cannot read '{path}': {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
    /// The file is no ONNX model.
    #[error("'{path}' is not an ONNX model: {source}")]
    Decode {
        /// The file.
        path: PathBuf,
        /// What the protobuf decoder said.
        source: prost::DecodeError,
    },
    /// An initializer's external data cannot be used.
    #[error("'{path}': the external data of tensor '{tensor}' {reason}")]
    ExternalData {
        /// The model file.
        path: PathBuf,
        /// The tensor.
        tensor: String,
        /// What is wrong.
        reason: String,
    },
}

/// The model in the file at `path`, its external data read in.
pub fn read_model(path: &Path) -> Result<ModelProto, ReadError> {
    let bytes = std::fs::read(path).map_err(|source| ReadError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let mut model = ModelProto::decode(bytes.as_slice()).map_err(|source| ReadError::Decode {
        path: path.to_path_buf(),
        source,
    })?;
    let folder = path.parent().unwrap_or(Path::new("."));
    if let Some(graph) = model.graph.as_mut() {
        for tensor in &mut graph.initializer {
            if tensor.data_location == DataLocation::External as i32 {
                load_external(path, folder, tensor)?;
            }
        }
    }
    Ok(model)
}

/// The tensor stored in the file at `path` (a serialized `TensorProto`, as ONNX test data
/// is), refused over `limit` bytes; its name and the tensor.
pub fn read_tensor(path: &Path, limit: u64) -> Result<(String, Tensor), String> {
    let bytes =
        std::fs::read(path).map_err(|e| format!("cannot read '{}': {e}", path.display()))?;
    let proto = TensorProto::decode(bytes.as_slice())
        .map_err(|e| format!("'{}' is not an ONNX tensor: {e}", path.display()))?;
    let tensor = tensor_of(&proto, limit).map_err(|e| format!("'{}': {e}", path.display()))?;
    Ok((proto.name, tensor))
}

/// The value of `key` in `tensor`'s external data entries.
fn entry<'t>(tensor: &'t TensorProto, key: &str) -> Option<&'t str> {
    tensor
        .external_data
        .iter()
        .find(|e| e.key == key)
        .map(|e| e.value.as_str())
}

/// Reads `tensor`'s external data (from a file in `folder`, the folder of the model at
/// `model`) into its `raw_data`.
fn load_external(model: &Path, folder: &Path, tensor: &mut TensorProto) -> Result<(), ReadError> {
    let fail = |reason: String| ReadError::ExternalData {
        path: model.to_path_buf(),
        tensor: tensor.name.clone(),
        reason,
    };
    let location = entry(tensor, "location").ok_or_else(|| fail("names no location".into()))?;
    let number = |key: &str| -> Result<Option<u64>, ReadError> {
        entry(tensor, key)
            .map(|v| {
                v.parse::<u64>()
                    .map_err(|_| fail(format!("has {key} '{v}', not a number of bytes")))
            })
            .transpose()
    };
    let offset = number("offset")?.unwrap_or(0);
    let length = number("length")?;
    let file = confined(folder, location).map_err(|e| fail(format!("is unusable: {e}")))?;
    let data =
        std::fs::read(&file).map_err(|e| fail(format!("cannot be read from '{location}': {e}")))?;
    let start = usize::try_from(offset).unwrap_or(usize::MAX);
    let end = match length {
        Some(length) => start.saturating_add(usize::try_from(length).unwrap_or(usize::MAX)),
        None => data.len(),
    };
    let bytes = data.get(start..end).ok_or_else(|| {
        fail(format!(
            "lies at bytes {start}..{end} of '{location}', which has {}",
            data.len()
        ))
    })?;
    tensor.raw_data = bytes.to_vec();
    tensor.data_location = DataLocation::Default as i32;
    tensor.external_data.clear();
    Ok(())
}
