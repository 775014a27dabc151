//! The reference semantics of an op: what the interpreter calls, one implementation per op in
//! its dialect's `eval.rs`.

use crate::attr::{Attribute, DenseValue};
use crate::dialect::{AttrDefault, OpSchema};
use crate::exec::tensor::{Tensor, TensorData};
use crate::infer::normalize_axis;
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

impl<'a> EvalContext<'a> {
    /// Operand `index`.
    pub fn operand(&self, index: usize) -> Result<&'a Tensor, EvalError> {
        self.operands.get(index).copied().ok_or_else(|| {
            EvalError(format!(
                "operand #{index} is missing ({} given)",
                self.operands.len()
            ))
        })
    }

    /// Operand `index`, when the op has it (optional operands come last).
    pub fn optional_operand(&self, index: usize) -> Option<&'a Tensor> {
        self.operands.get(index).copied()
    }

    /// The elements of operand `index`, which must be a float tensor.
    pub fn floats(&self, index: usize) -> Result<&'a [f64], EvalError> {
        match &self.operand(index)?.data {
            TensorData::Float(values) => Ok(values),
            _ => Err(EvalError(format!("operand #{index} is not a float tensor"))),
        }
    }

    /// The elements of operand `index`, a float tensor, when the op has it (optional
    /// operands come last).
    pub fn optional_floats(&self, index: usize) -> Result<Option<&'a [f64]>, EvalError> {
        self.optional_operand(index)
            .map(|_| self.floats(index))
            .transpose()
    }

    /// The type of result `index`.
    pub fn result_type(&self, index: usize) -> Result<&'a TensorType, EvalError> {
        self.result_types
            .get(index)
            .ok_or_else(|| EvalError(format!("result #{index} has no type")))
    }

    /// Attribute `name` (default applied) as an integer.
    pub fn int(&self, name: &str) -> Result<i64, EvalError> {
        self.attr(name)
            .and_then(|a| a.as_int())
            .ok_or_else(|| missing_attr(name, "an integer"))
    }

    /// Attribute `name` (default applied) as an axis of a rank-`rank` tensor, negative axes
    /// counted from the end.
    pub fn axis(&self, name: &str, rank: usize) -> Result<usize, EvalError> {
        let value = self.int(name)?;
        normalize_axis(value, rank)
            .ok_or_else(|| unverified(format!("axis {value} is out of range for rank {rank}")))
    }

    /// Attribute `name` (default applied) as a list of integers.
    pub fn int_list(&self, name: &str) -> Result<Vec<i64>, EvalError> {
        self.attr(name)
            .and_then(|a| a.as_int_list())
            .ok_or_else(|| missing_attr(name, "a list of integers"))
    }

    /// Attribute `name` (default applied) as a number.
    pub fn float(&self, name: &str) -> Result<f64, EvalError> {
        self.attr(name)
            .and_then(|a| a.as_f64())
            .ok_or_else(|| missing_attr(name, "a number"))
    }

    /// Attribute `name` (default applied) as a boolean.
    pub fn boolean(&self, name: &str) -> Result<bool, EvalError> {
        self.attr(name)
            .and_then(|a| a.as_bool())
            .ok_or_else(|| missing_attr(name, "a boolean"))
    }

    /// Attribute `name` (default applied) as a string.
    pub fn string(&self, name: &str) -> Result<String, EvalError> {
        self.attr(name)
            .and_then(|a| a.as_str().map(str::to_string))
            .ok_or_else(|| missing_attr(name, "a string"))
    }
}

/// An attribute that a verified op would have.
fn missing_attr(name: &str, kind: &str) -> EvalError {
    EvalError(format!("attribute '{name}' is missing or not {kind}"))
}

/// An error for a state the verifier rules out: the interpreter reports it, never panics.
pub fn unverified(what: impl Into<String>) -> EvalError {
    EvalError(format!("{} (the op was not verified)", what.into()))
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
