//! A value of any kind an ONNX graph passes between its nodes: a tensor, a sequence of
//! tensors, or an optional value. Sequences and optionals live only at import time — a
//! sequence's length and whether an optional holds a value are fixed when the model is
//! imported, like its shapes — so only their tensors reach the function: a sequence input is
//! one parameter per element, a sequence output one result per element. A string tensor is
//! the tensor of its strings' ids (see [`crate::strings`]), kept apart so that only the ops
//! that may take strings get it.

use crate::graph::{invalid, unsupported, NodeResult, Val};

/// A value of the graph under import.
#[derive(Clone, Debug)]
pub enum Item {
    /// A tensor.
    Tensor(Val),
    /// A tensor of strings, as the `i64` ids of its strings.
    Strings(Val),
    /// A sequence of tensors, in order.
    Sequence(Vec<Val>),
    /// An optional value: a tensor or a sequence, or nothing.
    Optional(Option<Box<Item>>),
}

impl Item {
    /// What kind of value it is, for messages: `a tensor`, `a sequence`, `an optional`.
    pub fn kind(&self) -> &'static str {
        match self {
            Item::Tensor(_) => "a tensor",
            Item::Strings(_) => "a tensor of strings",
            Item::Sequence(_) => "a sequence",
            Item::Optional(_) => "an optional",
        }
    }

    /// The tensor it is; `what` names it in the error otherwise.
    pub fn tensor(&self, what: &str) -> NodeResult<Val> {
        match self {
            Item::Tensor(v) => Ok(v.clone()),
            // Valid ONNX (a sequence of strings, say) that tessera does not take.
            Item::Strings(_) => unsupported(format!(
                "{what} is a tensor of strings, which tessera takes only in the ops that move \
                 them or test them for equality"
            )),
            other => invalid(format!(
                "{what} is {}, not a tensor of numbers",
                other.kind()
            )),
        }
    }

    /// The elements of the sequence it is; `what` names it in the error otherwise.
    pub fn sequence(&self, what: &str) -> NodeResult<Vec<Val>> {
        match self {
            Item::Sequence(elements) => Ok(elements.clone()),
            other => invalid(format!("{what} is {}, not a sequence", other.kind())),
        }
    }

    /// The tensors it holds, in order: itself, a sequence's elements, an optional's contents
    /// (none when it is empty). These are what a graph output of its kind becomes.
    pub fn tensors(&self) -> Vec<Val> {
        match self {
            Item::Tensor(v) | Item::Strings(v) => vec![v.clone()],
            Item::Sequence(elements) => elements.clone(),
            Item::Optional(Some(inner)) => inner.tensors(),
            Item::Optional(None) => Vec::new(),
        }
    }
}
