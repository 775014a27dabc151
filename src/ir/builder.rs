//! Building a function from nothing, op by op, each op checked by its own shape rule as it
//! is appended: what importers build modules with.

use crate::attr::{Attribute, DenseValue};
use crate::dialect::OpDef;
use crate::infer::infer_op;
use crate::ir::{Func, OpKind, Operation, ValueId, ValueInfo};
use crate::source::Span;
use crate::types::TensorType;
use std::collections::{BTreeMap, HashSet};

/// A function under construction.
pub struct FuncBuilder {
    name: String,
    params: Vec<ValueId>,
    values: Vec<ValueInfo>,
    names: HashSet<String>,
    ops: Vec<Operation>,
}

impl FuncBuilder {
    /// An empty function named `name` (without `@`; a valid symbol name).
    pub fn new(name: impl Into<String>) -> FuncBuilder {
        FuncBuilder {
            name: name.into(),
            params: Vec::new(),
            values: Vec::new(),
            names: HashSet::new(),
            ops: Vec::new(),
        }
    }

    /// Adds a parameter of type `ty`, named after `hint`; returns its value.
    pub fn param(&mut self, hint: &str, ty: TensorType) -> ValueId {
        let value = self.new_value(hint, ty);
        self.params.push(value);
        value
    }

    /// The type of `value`.
    pub fn ty(&self, value: ValueId) -> &TensorType {
        &self.values[value.index()].ty
    }

    /// The name `value` got (without `%`).
    pub fn name(&self, value: ValueId) -> &str {
        &self.values[value.index()].name
    }

    /// Appends `def` applied to `operands` with `attrs` (and a literal and written result
    /// types where the op needs them), checked by the op's shape rule; its results are named
    /// after `hint`. Returns the results, or the rule's complaint.
    pub fn op(
        &mut self,
        def: &'static dyn OpDef,
        operands: &[ValueId],
        attrs: BTreeMap<String, Attribute>,
        literal: Option<DenseValue>,
        written: Option<&[TensorType]>,
        hint: &str,
    ) -> Result<Vec<ValueId>, String> {
        let operand_types: Vec<TensorType> = operands.iter().map(|&v| self.ty(v).clone()).collect();
        let types = infer_op(def, &operand_types, &attrs, written, Span::default())?;
        let results: Vec<ValueId> = types
            .into_iter()
            .map(|ty| self.new_value(hint, ty))
            .collect();
        self.ops.push(Operation {
            kind: OpKind::Dialect(def),
            literal,
            operands: operands.to_vec(),
            attrs,
            results: results.clone(),
            span: Span::default(),
        });
        Ok(results)
    }

    /// The function, returning `returns`; ops whose results nothing uses are left out (ops
    /// have no effects, so what no result depends on is dead).
    pub fn finish(self, returns: Vec<ValueId>) -> Func {
        let result_types = returns.iter().map(|&r| self.ty(r).clone()).collect();
        let mut live = vec![false; self.values.len()];
        for &r in &returns {
            live[r.index()] = true;
        }
        let mut kept: Vec<Operation> = Vec::with_capacity(self.ops.len());
        for op in self.ops.into_iter().rev() {
            if op.results.iter().any(|r| live[r.index()]) {
                for operand in &op.operands {
                    live[operand.index()] = true;
                }
                kept.push(op);
            }
        }
        kept.reverse();
        Func {
            name: self.name,
            params: self.params,
            result_types,
            ops: kept,
            returns,
            values: self.values,
            span: Span::default(),
        }
    }

    /// A new value of type `ty` with a fresh name made from `hint`: characters a value name
    /// cannot hold become `_`, and a taken name gets a numeric suffix.
    fn new_value(&mut self, hint: &str, ty: TensorType) -> ValueId {
        let base: String = hint
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || "_.$-".contains(c) {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let base = if base.is_empty() {
            "v".to_string()
        } else {
            base
        };
        let mut name = base.clone();
        let mut k = 1;
        while !self.names.insert(name.clone()) {
            k += 1;
            name = format!("{base}_{k}");
        }
        self.values.push(ValueInfo {
            name,
            ty,
            span: Span::default(),
        });
        ValueId(self.values.len() as u32 - 1)
    }
}
