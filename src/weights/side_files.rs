//! Side files on disk: safetensors files beside a `.tsr` file, each read once and only from
//! inside that file's folder.

use crate::types::TensorType;
use crate::weights::{confined, element_of_dtype, StoredTensor, TensorStore};
use std::cell::RefCell;
use std::collections::HashMap;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The safetensors files in one folder, read on first use.
pub struct SideFiles {
    folder: PathBuf,
    files: RefCell<HashMap<String, Result<Arc<SideFile>, String>>>,
}

/// One read safetensors file: its bytes and where each tensor lies in them.
struct SideFile {
    bytes: Vec<u8>,
    entries: HashMap<String, (safetensors::Dtype, Vec<u64>, Range<usize>)>,
}

impl SideFiles {
    /// The side files of `folder`.
    pub fn new(folder: impl Into<PathBuf>) -> SideFiles {
        SideFiles {
            folder: folder.into(),
            files: RefCell::new(HashMap::new()),
        }
    }

    /// The side files beside the source file at `path` (its folder; the working directory for
    /// a bare name such as `<stdin>`).
    pub fn beside(path: &str) -> SideFiles {
        let folder = Path::new(path)
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        SideFiles::new(folder)
    }

    /// The file `name`, read and indexed once.
    fn file(&self, name: &str) -> Result<Arc<SideFile>, String> {
        self.files
            .borrow_mut()
            .entry(name.to_string())
            .or_insert_with(|| read(&self.folder, name).map(Arc::new))
            .clone()
    }
}

impl TensorStore for SideFiles {
    fn tensor(&self, file: &str, key: &str) -> Result<StoredTensor, String> {
        let side = self.file(file)?;
        let (dtype, shape, range) = side
            .entries
            .get(key)
            .ok_or_else(|| format!("'{file}' has no tensor '{key}'"))?;
        let element = element_of_dtype(*dtype).ok_or_else(|| {
            format!("tensor '{key}' of '{file}' has dtype {dtype:?}, which tessera has no element type for")
        })?;
        Ok(StoredTensor {
            ty: TensorType::new(shape.clone(), element),
            bytes: side.bytes[range.clone()].into(),
        })
    }
}

/// Reads and indexes the safetensors file `name` of `folder`.
fn read(folder: &Path, name: &str) -> Result<SideFile, String> {
    if !name.ends_with(".safetensors") {
        return Err(format!(
            "side file '{name}' must be a safetensors file (named '*.safetensors')"
        ));
    }
    let path = confined(folder, name).map_err(|e| format!("side file {e}"))?;
    let bytes =
        std::fs::read(&path).map_err(|e| format!("side file '{name}' cannot be read: {e}"))?;
    let (header_len, metadata) = safetensors::SafeTensors::read_metadata(&bytes)
        .map_err(|e| format!("side file '{name}' is not a valid safetensors file: {e}"))?;
    let data_start = 8 + header_len;
    let entries = metadata
        .tensors()
        .into_iter()
        .map(|(key, info)| {
            let (start, end) = info.data_offsets;
            let shape = info.shape.iter().map(|&d| d as u64).collect();
            (
                key,
                (info.dtype, shape, data_start + start..data_start + end),
            )
        })
        .collect();
    Ok(SideFile { bytes, entries })
}
