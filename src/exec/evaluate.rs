//! The reference semantics of an op: what the interpreter calls, one implementation per op in
//! its dialect's `eval.rs`.

use crate::attr::{Attribute, DenseValue};
use crate::dialect::{AttrDefault, OpSchema};
use crate::exec::tensor::Tensor;
use crate::types::TensorType;
use std::collections::BTreeMap;

/// An op to evaluate: its operands' values, attributes (defaults applied on request), literal
/// and result types. The op has been verified, so operands and attributes satisfy its rules.
pub struct EvalContext<'a> {
    /// The op's schema.
    pub schema: &'static OpSchema,
    /// The operand values, in order.
    pub operands: &'a [&'a Tensor],
    /// The attributes as written.
    pub attrs: &'a BTreeMap<String, Attribute>,
    /// The literal, for ops that take one.
    pub literal: Option<&'a DenseValue>,
    /// The result types the verifier inferred.
    pub result_types: &'a [TensorType],
}

impl EvalContext<'_> {
    /// Attribute `name` as written, else its default value (`None` when absent without one).
    pub fn attr(&self, name: &str) -> Option<Attribute> {
        if let Some(value) = self.attrs.get(name) {
            return Some(value.clone());
        }
        match self.schema.attr(name).map(|spec| spec.default) {
            Some(AttrDefault::Value(v)) => Some(v.to_attribute()),
            _ => None,
        }
    }
}

/// Why evaluation failed. Verified ops evaluate; this covers limits of the host (a tensor too
/// large to hold in memory) and inputs the caller supplied wrongly.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct EvalError(pub String);

/// The reference semantics of an op: plain, obviously correct, in f64 for float math.
pub trait Evaluate {
    /// The op's results for the operands and attributes in `ctx`.
    fn evaluate(&self, ctx: &EvalContext<'_>) -> Result<Vec<Tensor>, EvalError>;
}
