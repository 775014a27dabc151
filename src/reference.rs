//! The language reference of the registered dialects, rendered from their op tables so that
//! the documentation never drifts from what the verifier accepts.

use crate::dialect::{Arity, AttrDefault, DefaultValue, Registry};
use std::fmt::Write;

/// Markdown describing every registered dialect and op: summary, operands, literal,
/// attributes (kind, default) and semantics.
pub fn render_reference(registry: &Registry) -> String {
    let mut out = String::from(
        "# tessera dialect reference\n\n\
         Generated from the op tables by `tessera-opt --print-op-reference`; a test fails when \
         this file and the tables differ. The language itself (functions, values, types, \
         attributes, literals, canonical form) is described in the README.\n",
    );
    for dialect in registry.dialects() {
        let _ = write!(
            out,
            "\n## Dialect `{}`\n\n{}\n",
            dialect.name(),
            dialect.summary()
        );
        for op in dialect.ops() {
            let schema = op.schema();
            let _ = write!(
                out,
                "\n### `{}`\n\n{}\n\n",
                schema.full_name(),
                schema.summary
            );
            if let Some(literal) = schema.literal {
                let _ = writeln!(out, "- literal (first argument): {literal}");
            }
            for operand in schema.operands {
                let arity = match operand.arity {
                    Arity::One => "",
                    Arity::Optional => " (optional)",
                    Arity::Variadic => " (one or more)",
                };
                let _ = writeln!(out, "- operand `{}`{arity}: {}", operand.name, operand.doc);
            }
            for attr in schema.attrs {
                let default = match attr.default {
                    AttrDefault::Required => "required".to_string(),
                    AttrDefault::Value(DefaultValue::Str(s)) => format!("default `\"{s}\"`"),
                    AttrDefault::Value(v) => format!("default `{}`", v.to_attribute()),
                    AttrDefault::Derived(text) => format!("default {text}"),
                };
                let _ = writeln!(
                    out,
                    "- attribute `{}` ({}, {default}): {}",
                    attr.name,
                    attr.kind.describe(),
                    attr.doc
                );
            }
            if schema.result_type_required {
                let _ = writeln!(out, "- the result type must be written");
            }
            if let Some(decomposition) = op.decomposition() {
                let _ = writeln!(
                    out,
                    "- lowering: decomposes into {}",
                    decomposition.lowering()
                );
            }
            #[cfg(feature = "mlir")]
            if let Some(converter) = op.converter() {
                let _ = writeln!(out, "- lowering: converts to {}", converter.lowering());
            }
            let _ = writeln!(out, "\n{}", schema.description);
        }
    }
    out
}
