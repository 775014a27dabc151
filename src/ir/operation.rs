//! One op of a function body: what it computes, from which values, into which values.

use crate::attr::{Attribute, DenseValue};
use crate::dialect::OpDef;
use crate::ir::ValueId;
use crate::source::Span;
use std::collections::BTreeMap;

/// What an operation applies.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum OpKind {
    /// A dialect op.
    Dialect(&'static dyn OpDef),
    /// A call of the module's function at this index.
    Call(usize),
}

/// `%r = dialect.op literal, %a, %b {attrs}` or `%r = call @f(%a)`.
#[derive(Clone, Debug, PartialEq)]
pub struct Operation {
    /// What is applied.
    pub kind: OpKind,
    /// The `dense<...>` literal, for ops whose schema takes one (typed by result 0).
    pub literal: Option<DenseValue>,
    /// Tensor operands in order.
    pub operands: Vec<ValueId>,
    /// Attributes as written (defaults are not materialized), sorted by key.
    pub attrs: BTreeMap<String, Attribute>,
    /// The values it defines.
    pub results: Vec<ValueId>,
    /// The whole statement in the source.
    pub span: Span,
}
