//! String tensors, interned: compiled code never sees characters. Every string a model's
//! constants or a call's inputs hold gets an `i64` id in a [`StringTable`] (equal strings get
//! equal ids), a string tensor is the tensor of its ids, and the ops that only move elements,
//! test them for equality or read the shape run on the ids unchanged. Whoever calls the
//! function interns its string inputs into the import's table and maps the ids of its
//! string outputs back.

use std::collections::HashMap;
use tessera::exec::tensor::Tensor;
use tessera::types::{ElementType, TensorType};

/// Strings by id and ids by string.
#[derive(Clone, Debug, Default)]
pub struct StringTable {
    ids: HashMap<String, i64>,
    strings: Vec<String>,
}

impl StringTable {
    /// The id of `s`, a new one if the table does not hold it yet.
    pub fn intern(&mut self, s: &str) -> i64 {
        if let Some(&id) = self.ids.get(s) {
            return id;
        }
        let id = self.strings.len() as i64;
        self.strings.push(s.to_string());
        self.ids.insert(s.to_string(), id);
        id
    }

    /// Every string, in the order of their ids (the first has id 0).
    pub fn all(&self) -> &[String] {
        &self.strings
    }

    /// The tensor of the ids of `strings` (row-major, of `shape`), each interned.
    pub fn ids(&mut self, shape: Vec<u64>, strings: &[String]) -> Tensor {
        let ids: Vec<f64> = strings.iter().map(|s| self.intern(s) as f64).collect();
        Tensor::from_numbers(&TensorType::new(shape, ElementType::I64), ids)
    }

    /// The strings whose ids `ids` holds; an id the table lacks is an error.
    pub fn strings(&self, ids: &Tensor) -> Result<Vec<String>, String> {
        (0..ids.len())
            .map(|i| {
                let id = ids.get_f64(i) as i64;
                usize::try_from(id)
                    .ok()
                    .and_then(|k| self.strings.get(k))
                    .cloned()
                    .ok_or_else(|| format!("{id} is the id of no string"))
            })
            .collect()
    }
}

/// What an op gives when its inputs include string tensors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StringRule {
    /// Strings: it only moves or repeats elements (its outputs are string tensors).
    Keeps,
    /// Numbers: it tests elements for equality or reads the shape.
    Reads,
}

/// The ops that run on string tensors, and what they give.
const RULES: &[(&str, StringRule)] = &[
    ("Concat", StringRule::Keeps),
    ("DepthToSpace", StringRule::Keeps),
    ("Equal", StringRule::Reads),
    ("Expand", StringRule::Keeps),
    ("Flatten", StringRule::Keeps),
    ("Gather", StringRule::Keeps),
    ("GatherElements", StringRule::Keeps),
    ("GatherND", StringRule::Keeps),
    ("Reshape", StringRule::Keeps),
    ("ScatterElements", StringRule::Keeps),
    ("ScatterND", StringRule::Keeps),
    ("Shape", StringRule::Reads),
    ("Size", StringRule::Reads),
    ("Slice", StringRule::Keeps),
    ("SpaceToDepth", StringRule::Keeps),
    ("Split", StringRule::Keeps),
    ("Squeeze", StringRule::Keeps),
    ("Tile", StringRule::Keeps),
    ("Transpose", StringRule::Keeps),
    ("Unsqueeze", StringRule::Keeps),
    ("Where", StringRule::Keeps),
];

/// How op `op_type` treats string tensors; `None` when it does not take them.
pub fn rule(op_type: &str) -> Option<StringRule> {
    RULES
        .iter()
        .find(|(name, _)| *name == op_type)
        .map(|(_, rule)| *rule)
}
