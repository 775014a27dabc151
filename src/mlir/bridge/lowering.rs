//! How an op converts to MLIR: the `ConvertToMlir` trait its dialect implements (in the
//! dialect's `convert.rs`) and what a conversion sees of the op.

use crate::attr::{Attribute, DenseValue};
use crate::dialect::OpSchema;
use crate::mlir::bridge::emit::{ConvertResult, Emitter};
use crate::types::TensorType;
use melior::ir::Value;
use std::collections::BTreeMap;

/// An op being converted: its MLIR operands and everything the verifier knows about it.
pub struct OpConversion<'c, 'a, 'o> {
    /// Builds into the function body at the op's location.
    pub emit: Emitter<'c, 'a>,
    /// The MLIR values of the operands.
    pub operands: Vec<Value<'c, 'a>>,
    /// The operands' types.
    pub operand_types: Vec<&'o TensorType>,
    /// The result types.
    pub result_types: Vec<&'o TensorType>,
    /// The attributes as written.
    pub attrs: &'o BTreeMap<String, Attribute>,
    /// The literal, for ops that take one.
    pub literal: Option<&'o DenseValue>,
    /// The op's schema.
    pub schema: &'static OpSchema,
}

impl OpConversion<'_, '_, '_> {
    /// Attribute `name`, or its default.
    pub fn attr(&self, name: &str) -> Option<Attribute> {
        self.schema.attr_value(self.attrs, name)
    }

    /// Attribute `name` as a list of integers (empty when absent).
    pub fn int_list(&self, name: &str) -> Vec<i64> {
        self.attr(name)
            .and_then(|a| a.as_int_list())
            .unwrap_or_default()
    }

    /// The single result type.
    pub fn result(&self) -> &TensorType {
        self.result_types[0]
    }
}

/// An op that converts straight to MLIR.
pub trait ConvertToMlir {
    /// What the op becomes, for the language reference (`linalg.matmul`, ...).
    fn lowering(&self) -> &'static str;

    /// Emits the op and returns the MLIR values of its results.
    fn convert<'c, 'a>(&self, op: &OpConversion<'c, 'a, '_>) -> ConvertResult<Vec<Value<'c, 'a>>>;
}
