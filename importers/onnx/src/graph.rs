//! The graph under import: a tessera function built op by op through the ops' own shape
//! rules, values that are either computed at run time or known constants, and constant
//! folding — an op whose operands are all constants is evaluated by its reference semantics
//! at import time (so `Shape → Gather → Concat → Reshape` chains, batch-norm statistics and
//! transposed filters become constants), unless its result would be much larger than its
//! inputs; and transposes written only when a value is used in their layout — an op that
//! commutes with a transpose (its [`TransposeRule`]) is computed on the untransposed value, so
//! the NHWC-to-NCHW transpose after one convolution meets the NCHW-to-NHWC one before the next
//! and both vanish: an NCHW model runs channels-last from end to end.

use crate::strings::StringTable;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use tessera::attr::{Attribute, DenseValue, ExternalTensor, Scalar};
use tessera::dialect::{OpDef, Registry, TransposeRule};
use tessera::exec::bytes::encode;
use tessera::exec::evaluate::EvalContext;
use tessera::exec::tensor::{Tensor, TensorData};
use tessera::infer::infer_op;
use tessera::ir::{FuncBuilder, ValueId};
use tessera::source::Span;
use tessera::types::{ElementType, TensorType};
use tessera::weights::{MemoryStore, StoredTensor};

/// A value of the graph: computed by the function, or known at import time.
#[derive(Clone, Debug)]
pub enum Val {
    /// A value of the function being built.
    Dyn(ValueId),
    /// `transpose(source, perm)` of a value of the function, the transpose not yet written:
    /// ops that commute with it run on the source (and give a permuted value in turn), others
    /// get the transpose written, once per source and permutation.
    Permuted(ValueId, Arc<[i64]>),
    /// A constant (an initializer, a `Constant`, or a folded result).
    Const(Arc<Tensor>),
    /// A large constant whose elements are all this one (a `ConstantOfShape`): kept as one
    /// value, so a model whose weights are fills does not hold them element by element.
    Splat(Scalar, TensorType),
}

/// Why a node could not be converted.
#[derive(Debug)]
pub enum NodeError {
    /// A form of the op tessera cannot import (listed with all others at the end).
    Unsupported(String),
    /// The node is wrong (an attribute out of range, shapes that do not fit).
    Invalid(String),
}

/// Shorthand for a converter's result.
pub type NodeResult<T> = Result<T, NodeError>;

/// The `Unsupported` error with `message`.
pub fn unsupported<T>(message: impl Into<String>) -> NodeResult<T> {
    Err(NodeError::Unsupported(message.into()))
}

/// The `Invalid` error with `message`.
pub fn invalid<T>(message: impl Into<String>) -> NodeResult<T> {
    Err(NodeError::Invalid(message.into()))
}

/// Constants with at most this many elements (or all equal) are written inline in the text;
/// larger ones go to the side file.
const INLINE_ELEMENTS: usize = 16;

/// A folded result may have this many elements even when its operands have fewer (a
/// `ConstantOfShape`, a small `Expand`); above it, folding must not grow the constants.
const FOLD_GROWTH_ELEMENTS: u64 = 4096;

/// The ops that only move or repeat elements: applied to a splat, a splat.
const MOVES_DATA: &[&str] = &[
    "array.transpose",
    "array.reshape",
    "array.broadcast",
    "array.slice",
];

/// The state of one import.
pub struct Graph<'r> {
    registry: &'r Registry,
    builder: FuncBuilder,
    store: MemoryStore,
    /// Constants already made values, by the address of their tensor (kept alive here).
    materialized: HashMap<usize, (Arc<Tensor>, ValueId)>,
    /// Side-file keys of named constants (initializers), by the address of their tensor.
    keys: HashMap<usize, String>,
    /// Transposes written for permuted values, by source and permutation.
    written_transposes: HashMap<(ValueId, Arc<[i64]>), ValueId>,
    /// The name new values are named after (the current node's first output).
    hint: String,
    /// The strings of the model's string constants, by id.
    pub strings: StringTable,
}

impl<'r> Graph<'r> {
    /// An empty function `name` whose large constants go to side file `side_file`.
    pub fn new(registry: &'r Registry, name: &str, side_file: &str) -> Graph<'r> {
        Graph {
            registry,
            builder: FuncBuilder::new(name),
            store: MemoryStore::new(side_file),
            materialized: HashMap::new(),
            keys: HashMap::new(),
            written_transposes: HashMap::new(),
            hint: "v".into(),
            strings: StringTable::default(),
        }
    }

    /// Names new values after `hint` from now on.
    pub fn set_hint(&mut self, hint: &str) {
        self.hint = hint.to_string();
    }

    /// Adds a parameter named after `name`; returns it and the name it got.
    pub fn param(&mut self, name: &str, ty: TensorType) -> (Val, String) {
        let id = self.builder.param(name, ty);
        (Val::Dyn(id), self.builder.name(id).to_string())
    }

    /// A constant tensor of `strings` (row-major, of `shape`), as their ids, named `key`.
    pub fn string_constant(&mut self, shape: Vec<u64>, strings: &[String], key: &str) -> Val {
        let ids = self.strings.ids(shape, strings);
        self.named_constant(ids, key)
    }

    /// A constant named `key` (its side-file key if it goes there).
    pub fn named_constant(&mut self, tensor: Tensor, key: &str) -> Val {
        let tensor = Arc::new(tensor);
        self.keys
            .insert(Arc::as_ptr(&tensor) as usize, key.to_string());
        Val::Const(tensor)
    }

    /// A constant.
    pub fn constant(&self, tensor: Tensor) -> Val {
        Val::Const(Arc::new(tensor))
    }

    /// A constant of type `ty` whose every element is `value`: a tensor when small, else a
    /// [`Val::Splat`].
    pub fn splat(&self, value: Scalar, ty: TensorType) -> Val {
        let count = ty.num_elements().unwrap_or(u64::MAX);
        if count > FOLD_GROWTH_ELEMENTS {
            return Val::Splat(value, ty);
        }
        self.constant(Tensor::from_numbers(
            &ty,
            vec![value.as_f64(); count as usize],
        ))
    }

    /// A rank-0 constant of `element` type holding `value`.
    pub fn scalar(&self, value: f64, element: ElementType) -> Val {
        self.constant(Tensor::from_numbers(
            &TensorType::new(vec![], element),
            [value],
        ))
    }

    /// The type of `v`.
    pub fn ty(&self, v: &Val) -> TensorType {
        match v {
            Val::Dyn(id) => self.builder.ty(*id).clone(),
            Val::Permuted(id, perm) => permuted(self.builder.ty(*id), perm),
            Val::Const(t) => t.ty.clone(),
            Val::Splat(_, ty) => ty.clone(),
        }
    }

    /// The op registered as `name`.
    fn def(&self, name: &str) -> NodeResult<&'static dyn OpDef> {
        self.registry
            .op(name)
            .ok_or_else(|| NodeError::Invalid(format!("the registry has no '{name}'")))
    }

    /// `name` applied to `operands` with `attrs` (and the written result type `written`),
    /// folded when every operand is a constant; its single result.
    pub fn op(
        &mut self,
        name: &str,
        operands: &[Val],
        attrs: &[(&str, Attribute)],
        written: Option<TensorType>,
    ) -> NodeResult<Val> {
        let attrs: BTreeMap<String, Attribute> = attrs
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect();
        self.op_with(name, operands, attrs, written)
    }

    /// [`Graph::op`] with its attributes by key.
    fn op_with(
        &mut self,
        name: &str,
        operands: &[Val],
        attrs: BTreeMap<String, Attribute>,
        written: Option<TensorType>,
    ) -> NodeResult<Val> {
        let def = self.def(name)?;
        let operand_types: Vec<TensorType> = operands.iter().map(|v| self.ty(v)).collect();
        let written = written.map(|t| vec![t]);
        let types = infer_op(
            def,
            &operand_types,
            &attrs,
            written.as_deref(),
            Span::default(),
        )
        .map_err(|e| NodeError::Invalid(format!("'{name}': {e}")))?;
        if let Some(sunk) = self.sink(def, operands, &attrs, written.as_deref(), &types)? {
            return Ok(sunk);
        }
        if let ([only], [ty]) = (operands, types.as_slice()) {
            if let Some(value) = self
                .splat_value(only)
                .filter(|_| MOVES_DATA.contains(&name))
            {
                // Moving the elements of a splat around leaves a splat.
                return Ok(self.splat(value, ty.clone()));
            }
        }
        let consts: Option<Vec<&Tensor>> = operands
            .iter()
            .map(|v| match v {
                Val::Const(t) => Some(t.as_ref()),
                Val::Dyn(_) | Val::Permuted(..) | Val::Splat(..) => None,
            })
            .collect();
        if let Some(consts) = consts.filter(|c| !c.is_empty()) {
            let inputs: u64 = consts.iter().map(|t| t.len() as u64).sum();
            let outputs: u64 = types.iter().filter_map(TensorType::num_elements).sum();
            if outputs <= inputs.max(FOLD_GROWTH_ELEMENTS) {
                let ctx = EvalContext {
                    schema: def.schema(),
                    operands: &consts,
                    attrs: &attrs,
                    literal: None,
                    result_types: &types,
                };
                let mut results = def
                    .evaluate(&ctx)
                    .map_err(|e| NodeError::Invalid(format!("folding '{name}': {}", e.0)))?;
                // A weight moved by a one-operand op (a transposed filter) keeps its
                // initializer's name; a value computed from several is named by its node.
                let key = match operands {
                    [Val::Const(t)] => self.keys.get(&(Arc::as_ptr(t) as usize)).cloned(),
                    _ => None,
                };
                let folded = results.remove(0);
                return Ok(match key {
                    Some(key) => self.named_constant(folded, &key),
                    None => self.constant(folded),
                });
            }
        }
        let operand_ids: Vec<ValueId> = operands
            .iter()
            .map(|v| self.materialize(v))
            .collect::<NodeResult<_>>()?;
        let results = self
            .builder
            .op(
                def,
                &operand_ids,
                attrs,
                None,
                written.as_deref(),
                &self.hint,
            )
            .map_err(|e| NodeError::Invalid(format!("'{name}': {e}")))?;
        Ok(Val::Dyn(results[0]))
    }

    /// `v` as a value of the function: constants become `array.constant`s (once each).
    pub fn materialize(&mut self, v: &Val) -> NodeResult<ValueId> {
        let tensor = match v {
            Val::Dyn(id) => return Ok(*id),
            Val::Permuted(source, perm) => {
                let key = (*source, perm.clone());
                if let Some(id) = self.written_transposes.get(&key) {
                    return Ok(*id);
                }
                let list = Attribute::List(perm.iter().map(|&p| Attribute::Int(p)).collect());
                let attrs = BTreeMap::from([("perm".to_string(), list)]);
                let id = match self.op_with("array.transpose", &[Val::Dyn(*source)], attrs, None)? {
                    Val::Dyn(id) => id,
                    other => self.materialize(&other)?,
                };
                self.written_transposes.insert(key, id);
                return Ok(id);
            }
            Val::Const(t) => t,
            Val::Splat(value, ty) => {
                let def = self.def("array.constant")?;
                let name = format!("{}_c", self.hint);
                return Ok(self
                    .builder
                    .op(
                        def,
                        &[],
                        BTreeMap::new(),
                        Some(DenseValue::Splat(*value)),
                        Some(std::slice::from_ref(ty)),
                        &name,
                    )
                    .map_err(|e| NodeError::Invalid(format!("'array.constant': {e}")))?[0]);
            }
        };
        let address = Arc::as_ptr(tensor) as usize;
        if let Some((_, id)) = self.materialized.get(&address) {
            return Ok(*id);
        }
        let literal = self.literal(tensor, address);
        let name = self
            .keys
            .get(&address)
            .cloned()
            .unwrap_or_else(|| format!("{}_c", self.hint));
        let def = self.def("array.constant")?;
        let id = self
            .builder
            .op(
                def,
                &[],
                BTreeMap::new(),
                Some(literal),
                Some(std::slice::from_ref(&tensor.ty)),
                &name,
            )
            .map_err(|e| NodeError::Invalid(format!("'array.constant': {e}")))?[0];
        self.materialized.insert(address, (tensor.clone(), id));
        Ok(id)
    }

    /// The literal of constant `tensor`: a splat, its elements inline, or a side-file tensor.
    fn literal(&mut self, tensor: &Tensor, address: usize) -> DenseValue {
        let scalars: Vec<Scalar> = match &tensor.data {
            TensorData::Float(v) => v.iter().map(|&x| Scalar::Float(x)).collect(),
            TensorData::Int(v) => v.iter().map(|&x| Scalar::Int(x)).collect(),
            TensorData::Bool(v) => v.iter().map(|&x| Scalar::Bool(x)).collect(),
        };
        if scalars.len() > 1 && scalars.iter().all(|s| *s == scalars[0]) {
            return DenseValue::Splat(scalars[0]);
        }
        // Types safetensors has no dtype for (the 4- and 2-bit ones, which it packs) stay
        // inline whatever their size.
        let storable = tessera::weights::safetensors_dtype(tensor.ty.element).is_some();
        if scalars.len() <= INLINE_ELEMENTS || !storable {
            return DenseValue::Elements(scalars);
        }
        let base = self
            .keys
            .get(&address)
            .cloned()
            .unwrap_or_else(|| self.hint.clone());
        let mut key = base.clone();
        let mut k = 1;
        while self.store.contains(&key) {
            k += 1;
            key = format!("{base}_{k}");
        }
        let bytes: Arc<[u8]> = Arc::from(encode(tensor));
        self.store.insert(
            key.clone(),
            StoredTensor {
                ty: tensor.ty.clone(),
                bytes: bytes.clone(),
            },
        );
        DenseValue::External(ExternalTensor {
            file: self.store.file().to_string(),
            key,
            element: tensor.ty.element,
            bytes,
        })
    }

    /// The function returning `outputs`, and the side file's tensors.
    pub fn finish(mut self, outputs: &[Val]) -> NodeResult<(tessera::ir::Func, MemoryStore)> {
        let returns = outputs
            .iter()
            .map(|v| self.materialize(v))
            .collect::<NodeResult<Vec<_>>>()?;
        Ok((self.builder.finish(returns), self.store))
    }

    /// `x` with its dimensions permuted by `perm`: a constant's folded, a value's left
    /// [`Val::Permuted`] until a use needs it written; a transpose of a transpose is one (or
    /// none, when they cancel).
    pub fn transpose(&mut self, x: &Val, perm: &[i64]) -> NodeResult<Val> {
        let list = Attribute::List(perm.iter().map(|&p| Attribute::Int(p)).collect());
        let (source, perm): (ValueId, Vec<i64>) = match x {
            Val::Const(_) | Val::Splat(..) => {
                return self.op(
                    "array.transpose",
                    std::slice::from_ref(x),
                    &[("perm", list)],
                    None,
                )
            }
            Val::Dyn(id) => (*id, perm.to_vec()),
            Val::Permuted(id, first) => (*id, perm.iter().map(|&p| first[p as usize]).collect()),
        };
        // The permutation is checked against the value as the caller sees it.
        self.check("array.transpose", &[self.ty(x)], &[("perm", list)])?;
        if perm.iter().enumerate().all(|(i, &p)| p == i as i64) {
            return Ok(Val::Dyn(source));
        }
        Ok(Val::Permuted(source, perm.into()))
    }

    /// The result types of `name` on operands of types `operand_types` with `attrs`, or why
    /// they do not fit.
    fn check(
        &self,
        name: &str,
        operand_types: &[TensorType],
        attrs: &[(&str, Attribute)],
    ) -> NodeResult<Vec<TensorType>> {
        let attrs: BTreeMap<String, Attribute> = attrs
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect();
        infer_op(
            self.def(name)?,
            operand_types,
            &attrs,
            None,
            Span::default(),
        )
        .map_err(|e| NodeError::Invalid(format!("'{name}': {e}")))
    }

    /// `def` on `operands` computed on the sources of its permuted operands when it commutes
    /// with their permutation ([`OpDef::transpose_rule`]), its result permuted in turn; `None`
    /// when it does not, or when that would write a transpose of a value as large as the
    /// result (an operand in another layout).
    fn sink(
        &mut self,
        def: &dyn OpDef,
        operands: &[Val],
        attrs: &BTreeMap<String, Attribute>,
        written: Option<&[TensorType]>,
        types: &[TensorType],
    ) -> NodeResult<Option<Val>> {
        let rule = def.transpose_rule();
        let [result] = types else {
            return Ok(None);
        };
        if rule == TransposeRule::Blocks {
            return Ok(None);
        }
        let rank = result.rank();
        let Some(perm) = operands.iter().find_map(|v| match v {
            Val::Permuted(_, perm) if perm.len() == rank => Some(perm.clone()),
            _ => None,
        }) else {
            return Ok(None);
        };
        let inverse = invert(&perm);
        // How each operand reaches the untransposed layout, decided for all before any op is
        // written.
        enum Route {
            Source(ValueId),
            Unchanged,
            Transposed,
        }
        let mut routes = Vec::with_capacity(operands.len());
        for v in operands {
            let ty = self.ty(v);
            let broadcast = rule == TransposeRule::Elementwise
                && ty.rank() <= rank
                && ty.num_elements() < result.num_elements();
            let constant = matches!(v, Val::Const(_) | Val::Splat(..));
            routes.push(match v {
                Val::Permuted(source, p) if *p == perm => Route::Source(*source),
                _ if broadcast && ty.num_elements() == Some(1) => Route::Unchanged,
                _ if broadcast || (constant && ty.rank() == rank) => Route::Transposed,
                _ => return Ok(None),
            });
        }
        let mut sources = Vec::with_capacity(operands.len());
        for (v, route) in operands.iter().zip(routes) {
            sources.push(match route {
                Route::Source(id) => Val::Dyn(id),
                Route::Unchanged => v.clone(),
                Route::Transposed => {
                    // Leading unit dimensions first, as broadcasting would add them.
                    let ty = self.ty(v);
                    let mut shape = vec![1; rank - ty.rank()];
                    shape.extend(&ty.shape);
                    let full = self.reshape(v, shape)?;
                    match self.transpose(&full, &inverse)? {
                        permuted @ Val::Permuted(..) => Val::Dyn(self.materialize(&permuted)?),
                        other => other,
                    }
                }
            });
        }
        let mut attrs = attrs.clone();
        if let TransposeRule::Axes { per_dim, axes } = rule {
            for key in per_dim {
                if let Some(Attribute::List(list)) = attrs.get(*key) {
                    let mut reordered = list.clone();
                    for (d, entry) in list.iter().enumerate() {
                        reordered[perm[d] as usize] = entry.clone();
                    }
                    attrs.insert(key.to_string(), Attribute::List(reordered));
                }
            }
            let map = |a: i64| perm[a.rem_euclid(rank as i64) as usize];
            for key in axes {
                let mapped = match attrs.get(*key) {
                    Some(Attribute::Int(a)) => Attribute::Int(map(*a)),
                    Some(Attribute::List(list)) => {
                        let mut mapped: Vec<i64> = list
                            .iter()
                            .filter_map(|a| match a {
                                Attribute::Int(a) => Some(map(*a)),
                                _ => None,
                            })
                            .collect();
                        mapped.sort_unstable();
                        Attribute::List(mapped.into_iter().map(Attribute::Int).collect())
                    }
                    _ => continue,
                };
                attrs.insert(key.to_string(), mapped);
            }
        }
        let written = written
            .and_then(|w| w.first())
            .map(|w| permuted(w, &inverse));
        let name = def.schema().full_name();
        let y = self.op_with(&name, &sources, attrs, written)?;
        self.transpose(&y, &perm).map(Some)
    }

    /// `x` reshaped to `shape` (itself when it has that shape).
    pub fn reshape(&mut self, x: &Val, shape: Vec<u64>) -> NodeResult<Val> {
        let ty = self.ty(x);
        if ty.shape == shape {
            return Ok(x.clone());
        }
        let written = TensorType::new(shape, ty.element);
        self.op("array.reshape", std::slice::from_ref(x), &[], Some(written))
    }

    /// `x` broadcast to `shape` (itself when it has that shape).
    pub fn broadcast(&mut self, x: &Val, shape: Vec<u64>) -> NodeResult<Val> {
        let ty = self.ty(x);
        if ty.shape == shape {
            return Ok(x.clone());
        }
        let written = TensorType::new(shape, ty.element);
        self.op(
            "array.broadcast",
            std::slice::from_ref(x),
            &[],
            Some(written),
        )
    }

    /// `x` converted to `element` (itself when it has that type).
    pub fn cast(&mut self, x: &Val, element: ElementType) -> NodeResult<Val> {
        let ty = self.ty(x);
        if ty.element == element {
            return Ok(x.clone());
        }
        self.op(
            "array.cast",
            std::slice::from_ref(x),
            &[],
            Some(ty.with_element(element)),
        )
    }

    /// Elementwise `name` of `x`.
    pub fn unary(&mut self, name: &str, x: &Val) -> NodeResult<Val> {
        self.op(name, std::slice::from_ref(x), &[], None)
    }

    /// Elementwise `name` of `a` and `b`, broadcasting.
    pub fn binary(&mut self, name: &str, a: &Val, b: &Val) -> NodeResult<Val> {
        self.op(name, &[a.clone(), b.clone()], &[], None)
    }

    /// `a <predicate> b`, elementwise.
    pub fn compare(&mut self, a: &Val, b: &Val, predicate: &str) -> NodeResult<Val> {
        let predicate = Attribute::Str(predicate.into());
        self.op(
            "array.compare",
            &[a.clone(), b.clone()],
            &[("predicate", predicate)],
            None,
        )
    }

    /// `cond ? a : b`, elementwise.
    pub fn select(&mut self, cond: &Val, a: &Val, b: &Val) -> NodeResult<Val> {
        self.op(
            "array.select",
            &[cond.clone(), a.clone(), b.clone()],
            &[],
            None,
        )
    }

    /// The reduction `name` of `x` over `axes`.
    pub fn reduce(&mut self, name: &str, x: &Val, axes: &[i64], keepdims: bool) -> NodeResult<Val> {
        let axes = Attribute::List(axes.iter().map(|&a| Attribute::Int(a)).collect());
        self.op(
            name,
            std::slice::from_ref(x),
            &[("axes", axes), ("keepdims", Attribute::Bool(keepdims))],
            None,
        )
    }

    /// The slice `x[start:limit:stride]`.
    pub fn slice(
        &mut self,
        x: &Val,
        start: &[u64],
        limit: &[u64],
        stride: &[u64],
    ) -> NodeResult<Val> {
        let list =
            |v: &[u64]| Attribute::List(v.iter().map(|&d| Attribute::Int(d as i64)).collect());
        let ty = self.ty(x);
        if start.iter().all(|&s| s == 0)
            && limit == ty.shape.as_slice()
            && stride.iter().all(|&s| s == 1)
        {
            return Ok(x.clone());
        }
        self.op(
            "array.slice",
            std::slice::from_ref(x),
            &[
                ("start", list(start)),
                ("limit", list(limit)),
                ("stride", list(stride)),
            ],
            None,
        )
    }

    /// The value every element of `v` has, when `v` is a splat or a one-element constant.
    fn splat_value(&self, v: &Val) -> Option<Scalar> {
        match v {
            Val::Splat(value, _) => Some(*value),
            Val::Const(t) if t.len() == 1 => Some(match &t.data {
                TensorData::Float(x) => Scalar::Float(x[0]),
                TensorData::Int(x) => Scalar::Int(x[0]),
                TensorData::Bool(x) => Scalar::Bool(x[0]),
            }),
            _ => None,
        }
    }

    /// The integers of constant `v` (a shape, axes, pads), or why it cannot give them.
    pub fn ints(&self, v: &Val, what: &str) -> NodeResult<Vec<i64>> {
        match v {
            Val::Const(t) => match &t.data {
                TensorData::Int(values) => Ok(values.clone()),
                _ => invalid(format!("{what} must be integers, but it is {}", t.ty)),
            },
            Val::Splat(Scalar::Int(v), ty) => Ok(vec![*v; ty.num_elements().unwrap_or(0) as usize]),
            Val::Splat(_, ty) => invalid(format!("{what} must be integers, but it is {ty}")),
            Val::Dyn(_) | Val::Permuted(..) => unsupported(format!(
                "{what} is computed from the graph's inputs at run time; tessera needs it known at import time"
            )),
        }
    }

    /// The numbers of constant `v`, or why it cannot give them.
    pub fn numbers(&self, v: &Val, what: &str) -> NodeResult<Vec<f64>> {
        match v {
            Val::Const(t) => Ok((0..t.len()).map(|i| t.get_f64(i)).collect()),
            Val::Splat(v, ty) => Ok(vec![v.as_f64(); ty.num_elements().unwrap_or(0) as usize]),
            Val::Dyn(_) | Val::Permuted(..) => unsupported(format!(
                "{what} is computed from the graph's inputs at run time; tessera needs it known at import time"
            )),
        }
    }
}

/// `ty` with its dimensions permuted by `perm` (`transpose(ty, perm)`).
fn permuted(ty: &TensorType, perm: &[i64]) -> TensorType {
    TensorType::new(
        perm.iter().map(|&p| ty.shape[p as usize]).collect(),
        ty.element,
    )
}

/// The permutation that undoes `perm`.
fn invert(perm: &[i64]) -> Vec<i64> {
    let mut inverse = vec![0; perm.len()];
    for (d, &p) in perm.iter().enumerate() {
        inverse[p as usize] = d as i64;
    }
    inverse
}
