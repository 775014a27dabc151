//! Reading an ONNX model file: the protobuf decoded, and every initializer's external data
//! read into it from files that must lie inside the model's folder (a model names its data
//! files, and a model from anywhere must not make tessera read `/etc/shadow` or
//! `../../secrets`).

use crate::import::InputShape;
use crate::proto::{
    DataLocation, ModelProto, OptionalProto, SequenceProto, TensorProto, TypeProto,
    Value as TypeValue,
};
use crate::strings::StringTable;
use crate::tensor::{is_strings, strings_of, tensor_of};
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

/// A tensor stored as ONNX test data: of numbers, or of strings (shape and strings).
#[derive(Clone, Debug)]
pub enum StoredTensor {
    /// A tensor of numbers.
    Numbers(Tensor),
    /// A tensor of strings, row-major.
    Strings(Vec<u64>, Vec<String>),
}

impl StoredTensor {
    /// Its shape.
    pub fn shape(&self) -> &[u64] {
        match self {
            StoredTensor::Numbers(t) => &t.ty.shape,
            StoredTensor::Strings(shape, _) => shape,
        }
    }

    /// It as the function takes it: a tensor of strings as their ids, interned in `table`.
    pub fn into_tensor(self, table: &mut StringTable) -> Tensor {
        match self {
            StoredTensor::Numbers(t) => t,
            StoredTensor::Strings(shape, strings) => table.ids(shape, &strings),
        }
    }
}

/// A value stored as ONNX test data: a tensor, a sequence of tensors, or an empty optional
/// (an optional holding a value is that value).
#[derive(Clone, Debug)]
pub enum StoredValue {
    /// A tensor.
    Tensor(StoredTensor),
    /// A sequence of tensors.
    Sequence(Vec<StoredTensor>),
    /// An optional that holds no value.
    Nothing,
}

impl StoredValue {
    /// The shape an input of this value is imported with.
    pub fn shape(&self) -> InputShape {
        match self {
            StoredValue::Tensor(t) => InputShape::Tensor(t.shape().to_vec()),
            StoredValue::Sequence(ts) => {
                InputShape::Sequence(ts.iter().map(|t| t.shape().to_vec()).collect())
            }
            StoredValue::Nothing => InputShape::Absent,
        }
    }

    /// Its tensors in order, as the function takes or gives them.
    pub fn into_parts(self) -> Vec<StoredTensor> {
        match self {
            StoredValue::Tensor(t) => vec![t],
            StoredValue::Sequence(ts) => ts,
            StoredValue::Nothing => Vec::new(),
        }
    }
}

/// The tensor `proto` (named `path` in errors), of numbers or of strings, refused over `limit`
/// bytes.
fn stored_tensor(proto: &TensorProto, path: &Path, limit: u64) -> Result<StoredTensor, String> {
    let fail = |e: crate::tensor::TensorError| format!("'{}': {e}", path.display());
    if is_strings(proto) {
        let (shape, strings) = strings_of(proto, limit).map_err(fail)?;
        return Ok(StoredTensor::Strings(shape, strings));
    }
    tensor_of(proto, limit)
        .map(StoredTensor::Numbers)
        .map_err(fail)
}

/// The value of type `ty` stored in the file at `path` (a serialized `TensorProto`,
/// `SequenceProto` or `OptionalProto`, as ONNX test data is), each tensor refused over
/// `limit` bytes; its name and the value.
pub fn read_value(
    path: &Path,
    ty: Option<&TypeProto>,
    limit: u64,
) -> Result<(String, StoredValue), String> {
    let bytes =
        std::fs::read(path).map_err(|e| format!("cannot read '{}': {e}", path.display()))?;
    let fail = |why: String| format!("'{}': {why}", path.display());
    let sequence = |proto: &SequenceProto| -> Result<StoredValue, String> {
        if proto.elem_type > 1 {
            return Err(fail("is a sequence of values other than tensors".into()));
        }
        proto
            .tensor_values
            .iter()
            .map(|t| stored_tensor(t, path, limit))
            .collect::<Result<_, _>>()
            .map(StoredValue::Sequence)
    };
    match ty.and_then(|t| t.value.as_ref()) {
        None | Some(TypeValue::TensorType(_)) => {
            let proto = TensorProto::decode(bytes.as_slice())
                .map_err(|e| fail(format!("is not an ONNX tensor: {e}")))?;
            let tensor = stored_tensor(&proto, path, limit)?;
            Ok((proto.name, StoredValue::Tensor(tensor)))
        }
        Some(TypeValue::SequenceType(_)) => {
            let proto = SequenceProto::decode(bytes.as_slice())
                .map_err(|e| fail(format!("is not an ONNX sequence: {e}")))?;
            Ok((proto.name.clone(), sequence(&proto)?))
        }
        Some(TypeValue::OptionalType(_)) => {
            let proto = OptionalProto::decode(bytes.as_slice())
                .map_err(|e| fail(format!("is not an ONNX optional: {e}")))?;
            let value = match (&proto.tensor_value, &proto.sequence_value) {
                (Some(t), _) => StoredValue::Tensor(stored_tensor(t, path, limit)?),
                (None, Some(s)) => sequence(s)?,
                (None, None) => StoredValue::Nothing,
            };
            Ok((proto.name, value))
        }
        _ => Err(fail(
            "holds a value of a kind tessera does not take (a map)".into(),
        )),
    }
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
