//! A function: parameters, a straight-line body of operations, and the values it returns.

use crate::ir::{Operation, ValueId, ValueInfo};
use crate::source::Span;
use crate::types::TensorType;

/// `func @name(params) -> results { ops; return values }`.
#[derive(Clone, Debug, PartialEq)]
pub struct Func {
    /// The name without `@`.
    pub name: String,
    /// The parameters' values, in order.
    pub params: Vec<ValueId>,
    /// The declared result types.
    pub result_types: Vec<TensorType>,
    /// The body, in order: every operand is defined before its use.
    pub ops: Vec<Operation>,
    /// The returned values, matching `result_types`.
    pub returns: Vec<ValueId>,
    /// Every value of the function, indexed by [`ValueId`].
    pub values: Vec<ValueInfo>,
    /// The header in the source.
    pub span: Span,
}

impl Func {
    /// What is known about `id`.
    pub fn value(&self, id: ValueId) -> &ValueInfo {
        &self.values[id.index()]
    }

    /// The parameter types, in order.
    pub fn param_types(&self) -> impl Iterator<Item = &TensorType> {
        self.params.iter().map(|&p| &self.value(p).ty)
    }
}
