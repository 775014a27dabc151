//! `tessera-decompose`: replaces every op that is a composition (most of `nn`) by the ops it is
//! made of, so that only ops with a direct conversion reach MLIR. Each new op is verified by
//! its own shape rule as it is built.

use crate::attr::{Attribute, DenseValue};
use crate::dialect::{OpDef, OpSchema};
use crate::infer::infer_op;
use crate::ir::{Func, Module, OpKind, Operation, ValueId, ValueInfo};
use crate::source::Span;
use crate::types::TensorType;
use std::collections::{BTreeMap, HashMap, HashSet};

/// Why a decomposition failed: it built an op its own rules reject (a bug in the
/// decomposition, reported instead of producing wrong code).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("decomposition of '{op}' is invalid: {message}")]
pub struct DecomposeError {
    /// The op being decomposed.
    pub op: String,
    /// What its decomposition did wrong.
    pub message: String,
}

/// An op to decompose: operands, attributes (with defaults on request) and result types.
pub struct DecomposeOp<'a> {
    /// Its schema.
    pub schema: &'static OpSchema,
    /// Its operands.
    pub operands: &'a [ValueId],
    /// Its attributes as written.
    pub attrs: &'a BTreeMap<String, Attribute>,
    /// Its result types.
    pub result_types: Vec<TensorType>,
}

impl DecomposeOp<'_> {
    /// Attribute `name`, or its default.
    pub fn attr(&self, name: &str) -> Option<Attribute> {
        self.schema.attr_value(self.attrs, name)
    }

    /// Attribute `name` (the schema's default applied) as a number.
    pub fn float(&self, name: &str) -> Result<f64, DecomposeError> {
        self.attr(name)
            .and_then(|a| a.as_f64())
            .ok_or_else(|| self.missing(name, "a number"))
    }

    /// Attribute `name` (the schema's default applied) as an integer.
    pub fn int(&self, name: &str) -> Result<i64, DecomposeError> {
        self.attr(name)
            .and_then(|a| a.as_int())
            .ok_or_else(|| self.missing(name, "an integer"))
    }

    /// Attribute `name` (the schema's default applied) as a boolean.
    pub fn boolean(&self, name: &str) -> Result<bool, DecomposeError> {
        self.attr(name)
            .and_then(|a| a.as_bool())
            .ok_or_else(|| self.missing(name, "a boolean"))
    }

    /// The error for attribute `name`, absent or not `kind`, with no default.
    fn missing(&self, name: &str, kind: &str) -> DecomposeError {
        DecomposeError {
            op: format!("{}.{}", self.schema.dialect, self.schema.name),
            message: format!("attribute '{name}' is not {kind} and has no default"),
        }
    }
}

/// An op that is a composition of others.
pub trait Decompose {
    /// What the op decomposes into, for the language reference.
    fn lowering(&self) -> &'static str;

    /// Builds the op's computation with `builder` and returns the values that replace its
    /// results.
    fn decompose(
        &self,
        builder: &mut GraphBuilder<'_>,
        op: &DecomposeOp<'_>,
    ) -> Result<Vec<ValueId>, DecomposeError>;
}

/// Appends verified ops to a function under construction.
pub struct GraphBuilder<'f> {
    values: &'f mut Vec<ValueInfo>,
    names: &'f mut HashSet<String>,
    ops: Vec<Operation>,
    span: Span,
    base: String,
    op_name: String,
}

impl GraphBuilder<'_> {
    /// The type of `value`.
    pub fn ty(&self, value: ValueId) -> &TensorType {
        &self.values[value.index()].ty
    }

    /// Appends `def` applied to `operands` with `attrs` (and a literal and written result type
    /// where the op needs them), checked by the op's shape rule; returns its result.
    pub fn op(
        &mut self,
        def: &'static dyn OpDef,
        operands: &[ValueId],
        attrs: &[(&str, Attribute)],
        literal: Option<DenseValue>,
        result_type: Option<TensorType>,
    ) -> Result<ValueId, DecomposeError> {
        let operand_types: Vec<TensorType> = operands.iter().map(|&v| self.ty(v).clone()).collect();
        let attr_map: BTreeMap<String, Attribute> = attrs
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect();
        let written = result_type.map(|t| vec![t]);
        let fail = |message: String| DecomposeError {
            op: self.op_name.clone(),
            message,
        };
        let ty = match infer_op(
            def,
            &operand_types,
            &attr_map,
            written.as_deref(),
            self.span,
        )
        .map_err(fail)?
        .as_slice()
        {
            [ty] => ty.clone(),
            types => return Err(fail(format!("{} results where one was built", types.len()))),
        };
        let result = self.new_value(ty);
        self.ops.push(Operation {
            kind: OpKind::Dialect(def),
            literal,
            operands: operands.to_vec(),
            attrs: attr_map,
            results: vec![result],
            span: self.span,
        });
        Ok(result)
    }

    /// A new value named after the decomposed op's result (`%y.1`, `%y.2`, ...).
    fn new_value(&mut self, ty: TensorType) -> ValueId {
        let mut k = self.ops.len() + 1;
        let name = loop {
            let candidate = format!("{}.{k}", self.base);
            if self.names.insert(candidate.clone()) {
                break candidate;
            }
            k += 1;
        };
        self.values.push(ValueInfo {
            name,
            ty,
            span: self.span,
        });
        ValueId(self.values.len() as u32 - 1)
    }
}

/// The module with every decomposable op replaced, repeatedly, until none is left.
pub fn decompose(module: &Module) -> Result<Module, DecomposeError> {
    let funcs = module
        .funcs
        .iter()
        .map(decompose_func)
        .collect::<Result<_, _>>()?;
    Ok(Module { funcs })
}

fn decompose_func(func: &Func) -> Result<Func, DecomposeError> {
    let mut values = func.values.clone();
    let mut names: HashSet<String> = values.iter().map(|v| v.name.clone()).collect();
    let mut replaced: HashMap<ValueId, ValueId> = HashMap::new();
    let mut pending: Vec<Operation> = func.ops.iter().rev().cloned().collect();
    let mut ops = Vec::new();
    while let Some(mut op) = pending.pop() {
        for operand in &mut op.operands {
            *operand = *replaced.get(operand).unwrap_or(operand);
        }
        let OpKind::Dialect(def) = op.kind else {
            ops.push(op);
            continue;
        };
        let Some(decomposition) = def.decomposition() else {
            ops.push(op);
            continue;
        };
        let base = values[op.results[0].index()].name.clone();
        let result_types = op
            .results
            .iter()
            .map(|r| values[r.index()].ty.clone())
            .collect();
        let mut builder = GraphBuilder {
            values: &mut values,
            names: &mut names,
            ops: Vec::new(),
            span: op.span,
            base,
            op_name: def.schema().full_name(),
        };
        let request = DecomposeOp {
            schema: def.schema(),
            operands: &op.operands,
            attrs: &op.attrs,
            result_types,
        };
        let outputs = decomposition.decompose(&mut builder, &request)?;
        let new_ops = builder.ops;
        for (&old, &new) in op.results.iter().zip(&outputs) {
            replaced.insert(old, new);
        }
        // The new ops may decompose further: process them next, in order.
        pending.extend(new_ops.into_iter().rev());
    }
    let returns = func
        .returns
        .iter()
        .map(|r| *replaced.get(r).unwrap_or(r))
        .collect();
    Ok(Func {
        name: func.name.clone(),
        params: func.params.clone(),
        result_types: func.result_types.clone(),
        ops,
        returns,
        values,
        span: func.span,
    })
}
