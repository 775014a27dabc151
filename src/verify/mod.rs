//! Syntax tree to verified [`Module`]: name resolution, op lookup, schema checks, shape
//! inference, calls and returns. Every error of the module is reported, not only the first.
//!
//! Invariants of a module this returns:
//! - function names are unique; calls name an existing function with matching operand and
//!   result types; the call graph has no cycle;
//! - in each function, value names are unique, every use follows its definition, the body
//!   ends with exactly one `return` whose types match the signature;
//! - every op is registered, has the operand count and attributes its schema allows (kinds
//!   checked, required ones present), a literal only where its schema takes one, and result
//!   types equal to what its shape rule infers (written ones included);
//! - every dimension and element count fits in `i64`.

mod attrs;
mod literal;
mod types;

use crate::attr::Attribute;
use crate::diag::Diagnostic;
use crate::dialect::{OpDef, Registry};
use crate::infer::{storage_type_misuse, InferContext};
use crate::ir::{Func, Module, OpKind, Operation, ValueId, ValueInfo};
use crate::source::Span;
use crate::suggest::did_you_mean;
use crate::syntax::ast::*;
use crate::types::TensorType;
use crate::weights::TensorStore;
use std::collections::{BTreeMap, HashMap};

/// How many names "did you mean" compares a misspelled one with.
const SUGGESTION_CANDIDATES: usize = 256;

/// Verifies `ast` against the ops of `registry`; `external<...>` literals are read from `store`.
pub fn verify(
    ast: &AstModule,
    registry: &Registry,
    store: &dyn TensorStore,
) -> Result<Module, Vec<Diagnostic>> {
    let mut diags = Vec::new();
    let signatures = signatures(ast, &mut diags);
    let funcs: Vec<Option<Func>> = ast
        .funcs
        .iter()
        .zip(&signatures)
        .map(|(func, sig)| {
            FuncVerifier {
                registry,
                store,
                ast_funcs: &ast.funcs,
                signatures: &signatures,
                values: Vec::new(),
                scope: HashMap::new(),
                diags: &mut diags,
            }
            .verify(func, sig)
        })
        .collect();
    check_call_cycles(ast, &funcs, &mut diags);
    if !diags.is_empty() {
        return Err(diags);
    }
    Ok(Module {
        funcs: funcs
            .into_iter()
            .map(|f| f.expect("no errors, so every function verified"))
            .collect(),
    })
}

/// A function's parameter and result types, as declared.
struct Signature {
    /// Each parameter's type; `None` where the written type is invalid (already reported).
    params: Vec<Option<TensorType>>,
    /// The result types; `None` when one is invalid.
    results: Option<Vec<TensorType>>,
}

impl Signature {
    /// The parameter and result types, when all are valid.
    fn complete(&self) -> Option<(Vec<&TensorType>, &[TensorType])> {
        let params = self
            .params
            .iter()
            .map(Option::as_ref)
            .collect::<Option<Vec<_>>>()?;
        Some((params, self.results.as_deref()?))
    }
}

/// Each function's signature; reports invalid types and duplicate names.
fn signatures(ast: &AstModule, diags: &mut Vec<Diagnostic>) -> Vec<Signature> {
    let mut seen: HashMap<&str, Span> = HashMap::new();
    ast.funcs
        .iter()
        .map(|func| {
            if let Some(first) = seen.insert(&func.name.text, func.name.span) {
                diags.push(
                    Diagnostic::error(
                        func.name.span,
                        format!("redefinition of function '@{}'", func.name.text),
                    )
                    .with_note(first, "previous definition here"),
                );
            }
            let params = func
                .params
                .iter()
                .map(|p| report(types::tensor_type(&p.ty), diags))
                .collect();
            let results = func
                .results
                .iter()
                .map(|t| report(types::tensor_type(t), diags))
                .collect::<Vec<_>>();
            Signature {
                params,
                results: results.into_iter().collect(),
            }
        })
        .collect()
}

fn report<T>(result: Result<T, Diagnostic>, diags: &mut Vec<Diagnostic>) -> Option<T> {
    result.map_err(|d| diags.push(d)).ok()
}

/// Reports every call that closes a cycle in the call graph (recursion cannot terminate in a
/// language without control flow).
fn check_call_cycles(ast: &AstModule, funcs: &[Option<Func>], diags: &mut Vec<Diagnostic>) {
    let callees = |f: usize| -> Vec<(usize, Span)> {
        funcs[f].as_ref().map_or_else(Vec::new, |func| {
            func.ops
                .iter()
                .filter_map(|op| match op.kind {
                    OpKind::Call(callee) => Some((callee, op.span)),
                    OpKind::Dialect(_) => None,
                })
                .collect()
        })
    };
    // Depth-first search with colors; a call to a function on the stack closes a cycle.
    #[derive(Clone, Copy, PartialEq)]
    enum Color {
        New,
        OnStack,
        Done,
    }
    let mut color = vec![Color::New; funcs.len()];
    for root in 0..funcs.len() {
        if color[root] != Color::New {
            continue;
        }
        let mut stack: Vec<(usize, Vec<(usize, Span)>)> = vec![(root, callees(root))];
        color[root] = Color::OnStack;
        while let Some((f, pending)) = stack.last_mut() {
            let caller = *f;
            match pending.pop() {
                Some((callee, span)) => match color[callee] {
                    Color::New => {
                        color[callee] = Color::OnStack;
                        stack.push((callee, callees(callee)));
                    }
                    Color::OnStack => {
                        let start = stack.iter().position(|(g, _)| *g == callee).unwrap_or(0);
                        let cycle: Vec<String> = stack[start..]
                            .iter()
                            .map(|(g, _)| format!("@{}", ast.funcs[*g].name.text))
                            .chain([format!("@{}", ast.funcs[callee].name.text)])
                            .collect();
                        diags.push(Diagnostic::error(
                            span,
                            format!(
                                "recursive call to '@{}' (cycle: {}); functions cannot recurse",
                                ast.funcs[callee].name.text,
                                cycle.join(" -> ")
                            ),
                        ));
                    }
                    Color::Done => {}
                },
                None => {
                    color[caller] = Color::Done;
                    stack.pop();
                }
            }
        }
    }
}

/// Verifies one function body.
struct FuncVerifier<'a> {
    registry: &'a Registry,
    store: &'a dyn TensorStore,
    ast_funcs: &'a [AstFunc],
    signatures: &'a [Signature],
    /// Every value defined so far; `None` type when its defining op failed to verify.
    values: Vec<(String, Option<TensorType>, Span)>,
    scope: HashMap<String, ValueId>,
    diags: &'a mut Vec<Diagnostic>,
}

impl FuncVerifier<'_> {
    fn verify(mut self, func: &AstFunc, sig: &Signature) -> Option<Func> {
        let errors_before = self.diags.len();
        let later_defs = definitions(func);
        let params: Vec<ValueId> = func
            .params
            .iter()
            .zip(&sig.params)
            .map(|(p, ty)| self.define(&p.name, ty.clone()))
            .collect();
        let mut ops = Vec::new();
        let mut returns = None;
        for (index, stmt) in func.body.iter().enumerate() {
            if returns.is_some() {
                let span = match stmt {
                    AstStmt::Op(op) => op.span,
                    AstStmt::Return(r) => r.span,
                };
                self.diags.push(Diagnostic::error(
                    span,
                    format!(
                        "'return' must be the last statement of '@{}'",
                        func.name.text
                    ),
                ));
                break;
            }
            match stmt {
                AstStmt::Op(op) => ops.extend(self.op(op, index, &later_defs)),
                AstStmt::Return(ret) => {
                    returns = Some(self.ret(ret, func, sig, index, &later_defs))
                }
            }
        }
        let Some(returns) = returns else {
            self.diags.push(Diagnostic::error(
                func.close,
                format!("function '@{}' does not end with 'return'", func.name.text),
            ));
            return None;
        };
        // An invalid signature was reported when signatures were read.
        if self.diags.len() != errors_before || sig.complete().is_none() {
            return None;
        }
        // A value without a type and without an error here is the result of a call to a
        // function whose signature is invalid, reported when signatures were read.
        let values = self
            .values
            .into_iter()
            .map(|(name, ty, span)| {
                Some(ValueInfo {
                    name,
                    ty: ty?,
                    span,
                })
            })
            .collect::<Option<Vec<_>>>()?;
        Some(Func {
            name: func.name.text.clone(),
            params,
            result_types: sig.results.clone()?,
            ops,
            returns: returns?,
            values,
            span: func.span,
        })
    }

    /// Binds `name` to a new value; a second binding of a name is an error.
    fn define(&mut self, name: &Name, ty: Option<TensorType>) -> ValueId {
        let id = ValueId(self.values.len() as u32);
        if let Some(previous) = self.scope.get(&name.text) {
            let first = self.values[previous.index()].2;
            self.diags.push(
                Diagnostic::error(name.span, format!("redefinition of value '%{}'", name.text))
                    .with_note(first, "previous definition here"),
            );
        } else {
            self.scope.insert(name.text.clone(), id);
        }
        self.values.push((name.text.clone(), ty, name.span));
        id
    }

    /// The value `name` refers to at statement `index`, with its type (`None` when the
    /// defining op failed: no second error for the same cause).
    fn use_value(
        &mut self,
        name: &Name,
        index: usize,
        later_defs: &HashMap<&str, (usize, Span)>,
    ) -> Result<(ValueId, Option<TensorType>), ()> {
        if let Some(&id) = self.scope.get(&name.text) {
            return Ok((id, self.values[id.index()].1.clone()));
        }
        let diag = match later_defs.get(name.text.as_str()) {
            Some(&(at, def)) if at >= index => Diagnostic::error(
                name.span,
                format!("use of value '%{}' before its definition", name.text),
            )
            .with_note(def, "defined here"),
            _ => {
                // The most recent definitions only: suggestions stay linear in the number of errors.
                let known: Vec<String> = self
                    .values
                    .iter()
                    .rev()
                    .take(SUGGESTION_CANDIDATES)
                    .map(|(name, _, _)| format!("%{name}"))
                    .collect();
                let hint =
                    did_you_mean(&format!("%{}", name.text), known.iter().map(String::as_str));
                Diagnostic::error(
                    name.span,
                    format!("use of undefined value '%{}'{hint}", name.text),
                )
            }
        };
        self.diags.push(diag);
        Err(())
    }

    /// Resolves `names`; `None` when one is undefined or has no known type.
    fn use_values(
        &mut self,
        names: &[&Name],
        index: usize,
        later_defs: &HashMap<&str, (usize, Span)>,
    ) -> Option<Vec<(ValueId, TensorType, Span)>> {
        let resolved: Vec<_> = names
            .iter()
            .map(|n| {
                self.use_value(n, index, later_defs)
                    .map(|(id, ty)| (id, ty, n.span))
            })
            .collect();
        resolved
            .into_iter()
            .map(|r| r.ok().and_then(|(id, ty, span)| Some((id, ty?, span))))
            .collect()
    }

    fn written_types(
        &mut self,
        types: &Option<Vec<AstType>>,
    ) -> Option<Option<Vec<(TensorType, Span)>>> {
        let Some(types) = types else {
            return Some(None);
        };
        let converted: Vec<_> = types
            .iter()
            .map(|t| report(types::tensor_type(t), self.diags).map(|ty| (ty, t.span)))
            .collect();
        converted.into_iter().collect::<Option<Vec<_>>>().map(Some)
    }

    /// Verifies an op statement and defines its results (untyped when it fails).
    fn op(
        &mut self,
        op: &AstOp,
        index: usize,
        later_defs: &HashMap<&str, (usize, Span)>,
    ) -> Option<Operation> {
        let checked = match &op.callee {
            AstCallee::Op(name) => self.dialect_op(op, name, index, later_defs),
            AstCallee::Call(callee) => self.call(op, callee, index, later_defs),
        };
        let result_types: Vec<Option<TensorType>> = match &checked {
            Some((_, types)) => types.iter().cloned().map(Some).collect(),
            None => vec![None; op.results.len()],
        };
        let results: Vec<ValueId> = op
            .results
            .iter()
            .zip(result_types.into_iter().chain(std::iter::repeat(None)))
            .map(|(name, ty)| self.define(name, ty))
            .collect();
        let (mut operation, _) = checked?;
        operation.results = results;
        Some(operation)
    }

    /// Checks the number of result names against what the op produces.
    fn check_result_count(&mut self, op: &AstOp, what: &str, produced: usize) -> Option<()> {
        if op.results.len() == produced {
            return Some(());
        }
        let span = match (op.results.first(), op.results.last()) {
            (Some(first), Some(last)) => first.span.to(last.span),
            _ => op.span,
        };
        self.diags.push(Diagnostic::error(
            span,
            format!(
                "{what} produces {produced} result{}, but {} name{} bound",
                plural(produced),
                op.results.len(),
                if op.results.len() == 1 {
                    " is"
                } else {
                    "s are"
                }
            ),
        ));
        None
    }

    fn dialect_op(
        &mut self,
        op: &AstOp,
        name: &Name,
        index: usize,
        later_defs: &HashMap<&str, (usize, Span)>,
    ) -> Option<(Operation, Vec<TensorType>)> {
        let def = self.lookup_op(name)?;
        let schema = def.schema();
        let full = schema.full_name();
        let mut ok = self
            .check_result_count(op, &format!("'{full}'"), schema.results)
            .is_some();

        // Positional arguments: the literal (first, when the schema takes one), then values.
        let mut literal = None;
        let mut value_names = Vec::new();
        for (position, arg) in op.args.iter().enumerate() {
            match arg {
                AstArg::Dense(_) | AstArg::External(_)
                    if schema.literal.is_some() && position == 0 =>
                {
                    literal = Some(arg)
                }
                AstArg::Dense(_) | AstArg::External(_) => {
                    let why = if schema.literal.is_some() {
                        "takes its literal as the first argument only"
                    } else {
                        "takes no literal"
                    };
                    self.diags
                        .push(Diagnostic::error(arg.span(), format!("'{full}' {why}")));
                    ok = false;
                }
                AstArg::Value(v) => value_names.push(v),
            }
        }
        if schema.literal.is_some() && literal.is_none() {
            self.diags.push(Diagnostic::error(
                name.span,
                format!(
                    "'{full}' requires a literal (dense<...> or external<...>) as its first argument"
                ),
            ));
            ok = false;
        }
        let (min, max) = schema.operand_range();
        if value_names.len() < min || max.is_some_and(|m| value_names.len() > m) {
            let expected = match max {
                Some(m) if m == min => format!("{min}"),
                Some(m) => format!("{min} to {m}"),
                None => format!("at least {min}"),
            };
            let span = value_names
                .get(max.unwrap_or(usize::MAX))
                .map_or(name.span, |v| v.span);
            self.diags.push(Diagnostic::error(
                span,
                format!(
                    "'{full}' expects {expected} operand{}, but got {}",
                    plural(max.unwrap_or(min)),
                    value_names.len()
                ),
            ));
            ok = false;
        }
        let operands = self.use_values(&value_names, index, later_defs);
        let attrs = attrs::op_attributes(schema, &op.attrs, name.span, self.diags);
        let written = self.written_types(&op.types);
        let (operands, attrs, written) = (operands?, attrs?, written?);
        if let Some(w) = &written {
            if w.len() != schema.results {
                let span = w[0].1.to(w[w.len() - 1].1);
                self.diags.push(Diagnostic::error(
                    span,
                    format!(
                        "'{full}' has {} result{}, but {}",
                        schema.results,
                        plural(schema.results),
                        written_count(w.len())
                    ),
                ));
                return None;
            }
        }
        if schema.result_type_required && written.is_none() {
            let why = schema
                .literal
                .map_or("it gives the result's shape or element type", |_| {
                    "it types the literal"
                });
            self.diags.push(Diagnostic::error(
                op.span,
                format!("'{full}' needs its result type written ({why})"),
            ));
            return None;
        }
        let literal = match literal {
            Some(arg) => {
                let ty = &written
                    .as_ref()
                    .expect("literal ops require a written type")[0]
                    .0;
                let value = match arg {
                    AstArg::External(external) => literal::external_value(external, ty, self.store),
                    AstArg::Dense(dense) => literal::dense_value(dense, ty),
                    AstArg::Value(_) => unreachable!("only literals are taken as the literal"),
                };
                Some(report(value, self.diags)?)
            }
            None => None,
        };
        if !ok {
            return None;
        }
        let operand_types: Vec<(TensorType, Span)> = operands
            .iter()
            .map(|(_, ty, span)| (ty.clone(), *span))
            .collect();
        let mut ctx = InferContext::new(
            schema,
            &operand_types,
            &attrs,
            written.as_deref(),
            name.span,
            self.diags,
        );
        let inferred = def.infer(&mut ctx)?;
        let inferred = inferred
            .into_iter()
            .map(|ty| ctx.check_extent(ty))
            .collect::<Option<Vec<_>>>()?;
        let operand_refs: Vec<&TensorType> = operand_types.iter().map(|(t, _)| t).collect();
        if let Some(misuse) = storage_type_misuse(def, &operand_refs, &inferred) {
            self.diags.push(Diagnostic::error(name.span, misuse));
            return None;
        }
        self.check_written(written.as_deref(), &inferred, "the inferred type")?;
        Some((
            Operation {
                kind: OpKind::Dialect(def),
                literal,
                operands: operands.iter().map(|(id, _, _)| *id).collect(),
                attrs: attrs
                    .into_iter()
                    .map(|(k, (v, _))| (k, v))
                    .collect::<BTreeMap<String, Attribute>>(),
                results: Vec::new(),
                span: op.span,
            },
            inferred,
        ))
    }

    /// The op `dialect.name`, or an error naming what is unknown.
    fn lookup_op(&mut self, name: &Name) -> Option<&'static dyn OpDef> {
        if let Some(def) = self.registry.op(&name.text) {
            return Some(def);
        }
        let dialect = name.text.split('.').next().unwrap_or_default();
        let message = if self.registry.has_dialect(dialect) {
            let hint = did_you_mean(&name.text, self.registry.op_names());
            format!("unknown op '{}'{hint}", name.text)
        } else {
            let known: Vec<&str> = self.registry.dialects().iter().map(|d| d.name()).collect();
            format!(
                "unknown dialect '{dialect}' in '{}' (known dialects: {})",
                name.text,
                known.join(", ")
            )
        };
        self.diags.push(Diagnostic::error(name.span, message));
        None
    }

    /// Compares written result types with `expected` ones (`what` names where those come
    /// from), reporting each difference.
    fn check_written(
        &mut self,
        written: Option<&[(TensorType, Span)]>,
        expected: &[TensorType],
        what: &str,
    ) -> Option<()> {
        let mut ok = true;
        for ((ty, span), expected) in written.unwrap_or_default().iter().zip(expected) {
            if ty != expected {
                self.diags.push(Diagnostic::error(
                    *span,
                    format!("result type ({ty}) does not match {what} ({expected})"),
                ));
                ok = false;
            }
        }
        ok.then_some(())
    }

    fn call(
        &mut self,
        op: &AstOp,
        callee: &Name,
        index: usize,
        later_defs: &HashMap<&str, (usize, Span)>,
    ) -> Option<(Operation, Vec<TensorType>)> {
        let args: Vec<&Name> = op
            .args
            .iter()
            .filter_map(|a| match a {
                AstArg::Value(v) => Some(v),
                AstArg::Dense(_) | AstArg::External(_) => None,
            })
            .collect();
        let operands = self.use_values(&args, index, later_defs);
        let Some(target) = self
            .ast_funcs
            .iter()
            .position(|f| f.name.text == callee.text)
        else {
            let known: Vec<String> = self
                .ast_funcs
                .iter()
                .take(SUGGESTION_CANDIDATES)
                .map(|f| format!("@{}", f.name.text))
                .collect();
            let hint = did_you_mean(
                &format!("@{}", callee.text),
                known.iter().map(String::as_str),
            );
            self.diags.push(Diagnostic::error(
                callee.span,
                format!("call to unknown function '@{}'{hint}", callee.text),
            ));
            return None;
        };
        let defined_here = self.ast_funcs[target].name.span;
        let (params, results) = self.signatures[target].complete()?;
        let quoted = format!("call to '@{}'", callee.text);
        if args.len() != params.len() {
            self.diags.push(
                Diagnostic::error(
                    callee.span,
                    format!(
                        "{quoted} expects {} operand{}, but got {}",
                        params.len(),
                        plural(params.len()),
                        args.len()
                    ),
                )
                .with_note(defined_here, format!("'@{}' defined here", callee.text)),
            );
            return None;
        }
        self.check_result_count(op, &quoted, results.len())?;
        let operands = operands?;
        let mut ok = true;
        for (i, ((_, ty, span), &param)) in operands.iter().zip(&params).enumerate() {
            if ty != param {
                self.diags.push(
                    Diagnostic::error(
                        *span,
                        format!("operand #{i} of {quoted} has type ({ty}), but the parameter has type ({param})"),
                    )
                    .with_note(defined_here, format!("'@{}' defined here", callee.text)),
                );
                ok = false;
            }
        }
        let written = self.written_types(&op.types)?;
        if let Some(w) = &written {
            if w.len() != results.len() {
                self.diags.push(Diagnostic::error(
                    w[0].1.to(w[w.len() - 1].1),
                    format!(
                        "{quoted} returns {} value{}, but {}",
                        results.len(),
                        plural(results.len()),
                        written_count(w.len())
                    ),
                ));
                return None;
            }
        }
        self.check_written(written.as_deref(), results, "the callee's result type")?;
        ok.then(|| {
            (
                Operation {
                    kind: OpKind::Call(target),
                    literal: None,
                    operands: operands.iter().map(|(id, _, _)| *id).collect(),
                    attrs: BTreeMap::new(),
                    results: Vec::new(),
                    span: op.span,
                },
                results.to_vec(),
            )
        })
    }

    fn ret(
        &mut self,
        ret: &AstReturn,
        func: &AstFunc,
        sig: &Signature,
        index: usize,
        later_defs: &HashMap<&str, (usize, Span)>,
    ) -> Option<Vec<ValueId>> {
        let names: Vec<&Name> = ret.values.iter().collect();
        let values = self.use_values(&names, index, later_defs)?;
        let results = sig.results.as_ref()?;
        if values.len() != results.len() {
            self.diags.push(
                Diagnostic::error(
                    ret.span,
                    format!(
                        "'return' has {} operand{}, but '@{}' returns {}",
                        values.len(),
                        plural(values.len()),
                        func.name.text,
                        results.len()
                    ),
                )
                .with_note(func.span, "function declared here"),
            );
            return None;
        }
        let mut ok = true;
        for (i, ((_, ty, span), expected)) in values.iter().zip(results).enumerate() {
            if ty != expected {
                self.diags.push(
                    Diagnostic::error(
                        *span,
                        format!(
                            "return operand #{i} has type ({ty}), but '@{}' returns ({expected})",
                            func.name.text
                        ),
                    )
                    .with_note(func.span, "function declared here"),
                );
                ok = false;
            }
        }
        if let Some(types) = self.written_types(&ret.types)? {
            if types.len() != values.len() {
                self.diags.push(Diagnostic::error(
                    types[0].1.to(types[types.len() - 1].1),
                    format!(
                        "'return' has {} operand{}, but {}",
                        values.len(),
                        plural(values.len()),
                        written_count(types.len())
                    ),
                ));
                return None;
            }
            for ((written, span), (_, actual, _)) in types.iter().zip(&values) {
                if written != actual {
                    self.diags.push(Diagnostic::error(
                        *span,
                        format!("written type ({written}) does not match the returned value's type ({actual})"),
                    ));
                    ok = false;
                }
            }
        }
        ok.then(|| values.iter().map(|(id, _, _)| *id).collect())
    }
}

/// Where each name of a function is first defined: statement index and span.
fn definitions(func: &AstFunc) -> HashMap<&str, (usize, Span)> {
    let mut defs = HashMap::new();
    for (index, stmt) in func.body.iter().enumerate() {
        if let AstStmt::Op(op) = stmt {
            for result in &op.results {
                defs.entry(result.text.as_str())
                    .or_insert((index, result.span));
            }
        }
    }
    defs
}

/// `1 type is written`, `2 types are written`.
fn written_count(n: usize) -> String {
    match n {
        1 => "1 type is written".into(),
        n => format!("{n} types are written"),
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}
