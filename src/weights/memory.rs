//! A tensor store held in memory: the tensors of one virtual side file, for a module built in
//! memory (an imported model) before any file is written.

use crate::weights::{StoredTensor, TensorStore};
use std::collections::HashMap;

/// The tensors of the side file named `file`, by key.
#[derive(Clone, Debug, Default)]
pub struct MemoryStore {
    file: String,
    tensors: HashMap<String, StoredTensor>,
    order: Vec<String>,
}

impl MemoryStore {
    /// An empty store standing for the side file `file`.
    pub fn new(file: impl Into<String>) -> MemoryStore {
        MemoryStore {
            file: file.into(),
            ..MemoryStore::default()
        }
    }

    /// The side file's name, as literals refer to it.
    pub fn file(&self) -> &str {
        &self.file
    }

    /// Adds `tensor` under `key`, replacing any tensor of that key.
    pub fn insert(&mut self, key: impl Into<String>, tensor: StoredTensor) {
        let key = key.into();
        if self.tensors.insert(key.clone(), tensor).is_none() {
            self.order.push(key);
        }
    }

    /// True when `key` is taken.
    pub fn contains(&self, key: &str) -> bool {
        self.tensors.contains_key(key)
    }

    /// The tensors in the order they were added.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &StoredTensor)> {
        self.order
            .iter()
            .map(|key| (key.as_str(), &self.tensors[key]))
    }

    /// True when the store holds no tensor.
    pub fn is_empty(&self) -> bool {
        self.order.is_empty()
    }
}

impl TensorStore for MemoryStore {
    fn tensor(&self, file: &str, key: &str) -> Result<StoredTensor, String> {
        if file != self.file {
            return Err(format!(
                "'{file}' is not the side file of this module ('{}')",
                self.file
            ));
        }
        self.tensors
            .get(key)
            .cloned()
            .ok_or_else(|| format!("'{file}' has no tensor '{key}'"))
    }
}
