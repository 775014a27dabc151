//! Written attributes to [`Attribute`]s, checked against the op's schema: known keys, no
//! duplicates, required ones present, each value of the kind the op demands.

use crate::attr::Attribute;
use crate::diag::Diagnostic;
use crate::dialect::{AttrDefault, AttrKind, OpSchema};
use crate::number::parse_float;
use crate::source::Span;
use crate::suggest::did_you_mean;
use crate::syntax::ast::{AstAttr, AstAttrValue, ScalarKind};
use crate::types::ElementType;
use std::collections::BTreeMap;

/// The attributes of an op, keyed and checked against `schema`; every problem is reported.
pub fn op_attributes(
    schema: &OpSchema,
    written: &[AstAttr],
    op_span: Span,
    diags: &mut Vec<Diagnostic>,
) -> Option<BTreeMap<String, (Attribute, Span)>> {
    let name = schema.full_name();
    let mut attrs = BTreeMap::new();
    let errors_before = diags.len();
    for attr in written {
        let key = &attr.key.text;
        let Some(spec) = schema.attr(key) else {
            let accepted: Vec<&str> = schema.attrs.iter().map(|a| a.name).collect();
            let hint = match did_you_mean(key, accepted.iter().copied()) {
                s if s.is_empty() && accepted.is_empty() => " (it takes none)".to_string(),
                s if s.is_empty() => format!(" (accepted: {})", accepted.join(", ")),
                s => s,
            };
            diags.push(Diagnostic::error(
                attr.key.span,
                format!("'{name}' has no attribute '{key}'{hint}"),
            ));
            continue;
        };
        if let Some((_, first)) = attrs.get(key) {
            diags.push(
                Diagnostic::error(attr.key.span, format!("attribute '{key}' is given twice"))
                    .with_note(*first, "first given here"),
            );
            continue;
        }
        let span = attr.key.span.to(attr.value.span());
        match value(&attr.value).and_then(|v| of_kind(v, spec.kind, &attr.value)) {
            Ok(v) => {
                attrs.insert(key.clone(), (v, span));
            }
            Err((at, problem)) => diags.push(Diagnostic::error(
                at,
                format!("attribute '{key}' of '{name}' {problem}"),
            )),
        }
    }
    for spec in schema.attrs {
        if matches!(spec.default, AttrDefault::Required) && !attrs.contains_key(spec.name) {
            let written_key = written.iter().any(|a| a.key.text == spec.name);
            if !written_key {
                diags.push(Diagnostic::error(
                    op_span,
                    format!(
                        "'{name}' requires attribute '{}' ({})",
                        spec.name,
                        spec.kind.describe()
                    ),
                ));
            }
        }
    }
    (diags.len() == errors_before).then_some(attrs)
}

type Problem = (Span, String);

/// The attribute a written value denotes, before any kind check.
fn value(ast: &AstAttrValue) -> Result<Attribute, Problem> {
    match ast {
        AstAttrValue::Scalar(s) => match s.kind {
            ScalarKind::Int => s.text.parse::<i64>().map(Attribute::Int).map_err(|_| {
                (
                    s.span,
                    format!("has an integer ({}) that does not fit in 64 bits", s.text),
                )
            }),
            ScalarKind::Float => parse_float(&s.text, ElementType::F64)
                .map(Attribute::Float)
                .ok_or((s.span, format!("has an invalid float ({})", s.text))),
            ScalarKind::Bool => Ok(Attribute::Bool(s.text == "true")),
        },
        AstAttrValue::Str(text, _) => Ok(Attribute::Str(text.clone())),
        AstAttrValue::List(items, _) => items
            .iter()
            .map(value)
            .collect::<Result<_, _>>()
            .map(Attribute::List),
    }
}

/// Checks `value` against `kind`, converting integers to floats where a float is expected.
fn of_kind(value: Attribute, kind: AttrKind, ast: &AstAttrValue) -> Result<Attribute, Problem> {
    let wrong = |value: &Attribute| {
        Err((
            ast.span(),
            format!(
                "must be {} {}, but is {} {} ({value})",
                article(kind),
                kind.describe(),
                if value.kind_name() == "integer" {
                    "an"
                } else {
                    "a"
                },
                value.kind_name()
            ),
        ))
    };
    match (kind, value) {
        (AttrKind::Int, v @ Attribute::Int(_)) => Ok(v),
        (AttrKind::Float, Attribute::Int(v)) => Ok(Attribute::Float(v as f64)),
        (AttrKind::Float | AttrKind::Number, v @ Attribute::Float(_)) => Ok(v),
        (AttrKind::Number, v @ Attribute::Int(_)) => Ok(v),
        (AttrKind::Bool, v @ Attribute::Bool(_)) => Ok(v),
        (AttrKind::Enum(names) | AttrKind::IntListOrEnum(names), Attribute::Str(s)) => {
            if names.contains(&s.as_str()) {
                Ok(Attribute::Str(s))
            } else {
                Err((
                    ast.span(),
                    format!("must be one of {}, but is \"{s}\"", kind_names(names)),
                ))
            }
        }
        (AttrKind::IntList | AttrKind::IntListOrEnum(_), Attribute::List(items)) => {
            match items.iter().position(|i| i.as_int().is_none()) {
                None => Ok(Attribute::List(items)),
                Some(bad) => {
                    let at = match ast {
                        AstAttrValue::List(asts, _) => asts[bad].span(),
                        _ => ast.span(),
                    };
                    Err((
                        at,
                        format!(
                            "must be a list of integers, but element {bad} is {}",
                            items[bad]
                        ),
                    ))
                }
            }
        }
        (_, v) => wrong(&v),
    }
}

fn kind_names(names: &[&str]) -> String {
    names
        .iter()
        .map(|n| format!("\"{n}\""))
        .collect::<Vec<_>>()
        .join(", ")
}

fn article(kind: AttrKind) -> &'static str {
    match kind {
        AttrKind::Int => "an",
        AttrKind::Enum(_) => "one of",
        _ => "a",
    }
}
