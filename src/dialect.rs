//! How dialects plug in: the op-definition trait, op schemas, and the registry of dialects.
//!
//! The core knows ops only through [`OpDef`]: a schema (operands, attributes with kinds and
//! defaults, documentation) that the verifier checks generically, and a shape rule that the
//! op's dialect writes once, next to the op.

use crate::attr::Attribute;
use crate::exec::evaluate::Evaluate;
use crate::infer::InferContext;
use crate::transforms::decompose::Decompose;
use crate::types::TensorType;
use std::collections::BTreeMap;
use std::fmt;

/// An op's attributes as written, by key.
pub type Attrs = BTreeMap<String, Attribute>;

/// One op of a dialect: its schema and its shape/type rule.
pub trait OpDef: Evaluate + Sync + 'static {
    /// Name, operands, attributes and documentation.
    fn schema(&self) -> &OpSchema;

    /// Checks the op's operands and attributes (already checked against the schema) and
    /// returns its result types, or reports through `ctx` and returns `None`.
    fn infer(&self, ctx: &mut InferContext<'_>) -> Option<Vec<TensorType>>;

    /// True when the op takes and makes tensors of the storage-only element types
    /// ([`crate::types::ElementType::is_storage_only`]): casts, constants and ops that only
    /// move elements. Every other op computing on them is a verifier error.
    fn moves_storage_types(&self) -> bool {
        false
    }

    /// How the op becomes other ops of the graph, for ops that are compositions (`None`:
    /// it converts to MLIR directly). Every op has exactly one of the two; a test checks it.
    fn decomposition(&self) -> Option<&dyn Decompose> {
        None
    }

    /// The arithmetic operations one execution performs, counted on its operand and result
    /// types and its attributes as written (a multiply-add is two; exp, tanh, compares and
    /// casts are one per element; moving data is none), for GFLOP/s figures. Ops that
    /// decompose count 0: count on the decomposed graph.
    fn flops(&self, _operands: &[&TensorType], _results: &[&TensorType], _attrs: &Attrs) -> u64 {
        0
    }

    /// How many rounded terms each result element sums, for an op that accumulates (a
    /// reduction's reduced elements, a matmul's inner dimension, a convolution's filter taps,
    /// an average's window); `None` for the others. Compiled code adds the terms in another
    /// order than the reference, or in a wider type, and its partial sums round at their own
    /// size, which the sum of the terms' magnitudes (the op on its operands' absolute values)
    /// bounds, not at the size of a result that cancels to near zero; `n` such roundings of
    /// random sign add up to about `sqrt(n)` of them.
    fn accumulated_terms(
        &self,
        _operands: &[&TensorType],
        _results: &[&TensorType],
        _attrs: &Attrs,
    ) -> Option<u64> {
        None
    }

    /// How the op commutes with a transpose of its operands, for passes that move transposes
    /// through the graph so that pairs of them cancel (the ONNX importer runs NCHW models
    /// channels-last this way). The default, [`TransposeRule::Blocks`], is always correct.
    fn transpose_rule(&self) -> TransposeRule {
        TransposeRule::Blocks
    }

    /// How the op becomes MLIR (`None`: it decomposes first).
    #[cfg(feature = "mlir")]
    fn converter(&self) -> Option<&dyn crate::mlir::bridge::lowering::ConvertToMlir> {
        None
    }
}

impl fmt::Debug for dyn OpDef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.schema().full_name())
    }
}

impl PartialEq for dyn OpDef {
    fn eq(&self, other: &dyn OpDef) -> bool {
        self.schema().full_name() == other.schema().full_name()
    }
}

/// How an op commutes with a permutation `p` of its operands' dimensions: when it does,
/// `op(transpose(a, p), ...)` is `transpose(op'(a, ...), p)`, with `op'` the same op computed
/// on the untransposed operands (its attributes rewritten as the rule says).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TransposeRule {
    /// It does not (a convolution's fixed layout, a matmul's contraction, a reshape).
    Blocks,
    /// Elementwise with broadcasting: any permutation, attributes unchanged, for operands of
    /// the result's rank (an operand of lower rank is first given leading unit dimensions).
    Elementwise,
    /// When its operands and result all have one rank, with the attributes that index
    /// dimensions rewritten: `per_dim` lists (one entry per dimension) reordered, `axes`
    /// (a dimension, or a list of them; negative counts from the end) mapped.
    Axes {
        /// Attributes holding one entry per dimension (a pad's `low`, a slice's `start`).
        per_dim: &'static [&'static str],
        /// Attributes naming dimensions (a concat's `axis`, a reduction's `axes`).
        axes: &'static [&'static str],
    },
}

/// The static description of an op: everything the verifier and the docs need.
#[derive(Debug)]
pub struct OpSchema {
    /// The dialect's name (`nn`).
    pub dialect: &'static str,
    /// The op's name within its dialect (`dense`).
    pub name: &'static str,
    /// One line: what the op computes.
    pub summary: &'static str,
    /// Semantics: formula, broadcasting, numerics, defaults (Markdown).
    pub description: &'static str,
    /// Positional tensor operands in order; optional ones come last.
    pub operands: &'static [OperandSpec],
    /// When set, the op takes one `dense<...>` literal before its operands, typed by the op's
    /// written result type; the text names and describes it.
    pub literal: Option<&'static str>,
    /// Attributes the op accepts; any other key is an error.
    pub attrs: &'static [AttrSpec],
    /// Number of results.
    pub results: usize,
    /// True when the result type must be written because it carries information the operands
    /// do not (a reshape's shape, a cast's element type).
    pub result_type_required: bool,
}

impl OpSchema {
    /// `dialect.name`.
    pub fn full_name(&self) -> String {
        format!("{}.{}", self.dialect, self.name)
    }

    /// The fewest and the most operands the op takes (`None`: no upper bound).
    pub fn operand_range(&self) -> (usize, Option<usize>) {
        let min = self
            .operands
            .iter()
            .filter(|o| o.arity != Arity::Optional)
            .count();
        let max = if self.operands.iter().any(|o| o.arity == Arity::Variadic) {
            None
        } else {
            Some(self.operands.len())
        };
        (min, max)
    }

    /// The attribute spec named `key`.
    pub fn attr(&self, key: &str) -> Option<&AttrSpec> {
        self.attrs.iter().find(|a| a.name == key)
    }

    /// Attribute `key` as written in `attrs`, else its default value (`None` when absent
    /// without one).
    pub fn attr_value(&self, attrs: &BTreeMap<String, Attribute>, key: &str) -> Option<Attribute> {
        if let Some(value) = attrs.get(key) {
            return Some(value.clone());
        }
        match self.attr(key).map(|spec| spec.default) {
            Some(AttrDefault::Value(v)) => Some(v.to_attribute()),
            _ => None,
        }
    }
}

/// A positional operand of an op.
#[derive(Debug)]
pub struct OperandSpec {
    /// Its name in docs and messages (`x`, `bias`).
    pub name: &'static str,
    /// Required, optional, or one-or-more.
    pub arity: Arity,
    /// What it is (shape and role).
    pub doc: &'static str,
}

/// How many values an operand position takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arity {
    /// Exactly one.
    One,
    /// Zero or one (only at the end).
    Optional,
    /// One or more (only as the last operand).
    Variadic,
}

/// An attribute an op accepts.
#[derive(Debug)]
pub struct AttrSpec {
    /// Its key.
    pub name: &'static str,
    /// The kind of value it takes.
    pub kind: AttrKind,
    /// Its default, or that it is required.
    pub default: AttrDefault,
    /// What it means.
    pub doc: &'static str,
}

/// The kinds of attribute value an op can demand.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AttrKind {
    /// An integer.
    Int,
    /// A float; integers are accepted and stored as floats.
    Float,
    /// An integer or a float, kept as written.
    Number,
    /// `true` or `false`.
    Bool,
    /// One of these strings.
    Enum(&'static [&'static str]),
    /// A list of integers.
    IntList,
    /// A list of integers, or one of these strings.
    IntListOrEnum(&'static [&'static str]),
}

impl AttrKind {
    /// How the kind reads in messages and docs.
    pub fn describe(self) -> String {
        let quoted = |names: &[&str]| {
            names
                .iter()
                .map(|n| format!("\"{n}\""))
                .collect::<Vec<_>>()
                .join(" | ")
        };
        match self {
            AttrKind::Int => "integer".into(),
            AttrKind::Float => "float".into(),
            AttrKind::Number => "number".into(),
            AttrKind::Bool => "boolean".into(),
            AttrKind::Enum(names) => quoted(names),
            AttrKind::IntList => "list of integers".into(),
            AttrKind::IntListOrEnum(names) => format!("list of integers | {}", quoted(names)),
        }
    }
}

/// What an absent attribute means.
#[derive(Clone, Copy, Debug)]
pub enum AttrDefault {
    /// It must be written.
    Required,
    /// It defaults to this value.
    Value(DefaultValue),
    /// Absent has a meaning that depends on the operands (for example `1/sqrt(d)`), stated here.
    Derived(&'static str),
}

/// A default attribute value that can be written in a `static` table.
#[derive(Clone, Copy, Debug)]
pub enum DefaultValue {
    /// An integer.
    Int(i64),
    /// A float.
    Float(f64),
    /// A boolean.
    Bool(bool),
    /// A string.
    Str(&'static str),
}

impl DefaultValue {
    /// The default as an attribute value.
    pub fn to_attribute(self) -> Attribute {
        match self {
            DefaultValue::Int(v) => Attribute::Int(v),
            DefaultValue::Float(v) => Attribute::Float(v),
            DefaultValue::Bool(v) => Attribute::Bool(v),
            DefaultValue::Str(v) => Attribute::Str(v.to_string()),
        }
    }
}

/// A dialect: a namespace of ops.
pub trait Dialect: Sync + 'static {
    /// The prefix of its op names (`array`).
    fn name(&self) -> &'static str;
    /// One line about what the dialect is for.
    fn summary(&self) -> &'static str;
    /// Its ops.
    fn ops(&self) -> &'static [&'static dyn OpDef];
}

/// The dialects a tool knows, and their ops by full name.
#[derive(Default)]
pub struct Registry {
    dialects: Vec<&'static dyn Dialect>,
    ops: BTreeMap<String, &'static dyn OpDef>,
}

impl Registry {
    /// An empty registry.
    pub fn new() -> Registry {
        Registry::default()
    }

    /// Adds `dialect` and all its ops.
    pub fn with(mut self, dialect: &'static dyn Dialect) -> Registry {
        for op in dialect.ops() {
            self.ops.insert(op.schema().full_name(), *op);
        }
        self.dialects.push(dialect);
        self
    }

    /// The op named `dialect.name`.
    pub fn op(&self, full_name: &str) -> Option<&'static dyn OpDef> {
        self.ops.get(full_name).copied()
    }

    /// Whether a dialect of this name is registered.
    pub fn has_dialect(&self, name: &str) -> bool {
        self.dialects.iter().any(|d| d.name() == name)
    }

    /// The registered dialects, in registration order.
    pub fn dialects(&self) -> &[&'static dyn Dialect] {
        &self.dialects
    }

    /// Every registered op's full name, sorted.
    pub fn op_names(&self) -> impl Iterator<Item = &str> {
        self.ops.keys().map(String::as_str)
    }
}
