//! The canonical printer: a verified module as `.tsr` text that the parser reads back to an
//! equal module.
//!
//! Canonical form: functions separated by a blank line, two-space indent, one op per line,
//! attributes sorted by key, result types always written, floats in the shortest form that
//! reads back to the same bits, value names kept. Printing is a fixpoint on its own output.

use crate::ir::{Func, Module, OpKind, ValueId};
use crate::types::TensorType;
use std::fmt::Write;

/// The canonical text of `module`.
pub fn print_module(module: &Module) -> String {
    let mut out = String::new();
    for (i, func) in module.funcs.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        print_func(module, func, &mut out);
    }
    out
}

fn print_func(module: &Module, func: &Func, out: &mut String) {
    let params: Vec<String> = func
        .params
        .iter()
        .map(|&p| format!("%{}: {}", func.value(p).name, func.value(p).ty))
        .collect();
    let _ = write!(out, "func @{}({})", func.name, params.join(", "));
    match func.result_types.as_slice() {
        [] => {}
        [one] => {
            let _ = write!(out, " -> {one}");
        }
        many => {
            let _ = write!(out, " -> ({})", type_list(many.iter()));
        }
    }
    out.push_str(" {\n");
    let value_list = |ids: &[ValueId]| {
        ids.iter()
            .map(|&id| format!("%{}", func.value(id).name))
            .collect::<Vec<_>>()
            .join(", ")
    };
    for op in &func.ops {
        let result_types = type_list(op.results.iter().map(|&r| &func.value(r).ty));
        out.push_str("  ");
        if !op.results.is_empty() {
            let _ = write!(out, "{} = ", value_list(&op.results));
        }
        match op.kind {
            OpKind::Call(callee) => {
                let _ = write!(
                    out,
                    "call @{}({})",
                    module.funcs[callee].name,
                    value_list(&op.operands)
                );
            }
            OpKind::Dialect(def) => {
                out.push_str(&def.schema().full_name());
                let mut args = Vec::new();
                if let Some(literal) = &op.literal {
                    args.push(literal.display(&func.value(op.results[0]).ty));
                }
                if !op.operands.is_empty() {
                    args.push(value_list(&op.operands));
                }
                if !args.is_empty() {
                    let _ = write!(out, " {}", args.join(", "));
                }
                if !op.attrs.is_empty() {
                    let attrs: Vec<String> =
                        op.attrs.iter().map(|(k, v)| format!("{k} = {v}")).collect();
                    let _ = write!(out, " {{{}}}", attrs.join(", "));
                }
            }
        }
        if !op.results.is_empty() {
            let _ = write!(out, " : {result_types}");
        }
        out.push('\n');
    }
    out.push_str("  return");
    if !func.returns.is_empty() {
        let types = type_list(func.returns.iter().map(|&r| &func.value(r).ty));
        let _ = write!(out, " {} : {types}", value_list(&func.returns));
    }
    out.push_str("\n}\n");
}

fn type_list<'a>(types: impl Iterator<Item = &'a TensorType>) -> String {
    types
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}
