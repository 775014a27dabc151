//! SSA values: an id per value of a function, and what is known about each.

use crate::source::Span;
use crate::types::TensorType;

/// Index of a value in its function's value table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ValueId(pub u32);

impl ValueId {
    /// The index as `usize`.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// A value's name (without `%`), type and place of definition.
#[derive(Clone, Debug, PartialEq)]
pub struct ValueInfo {
    /// The name, kept from the source.
    pub name: String,
    /// Its tensor type.
    pub ty: TensorType,
    /// Where it is defined.
    pub span: Span,
}
