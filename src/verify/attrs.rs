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
    let mut seen: BTreeMap<&str, Span> = BTreeMap::new();
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
        if let Some(first) = seen.insert(key, attr.key.span) {
            diags.push(
                Diagnostic::error(
                    attr.key.span,
                    format!("'{name}' attribute '{key}' is given twice"),
                )
                .with_note(first, "first given here"),
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
                format!("'{name}' attribute '{key}' {problem}"),
            )),
        }
    }
    for spec in schema.attrs {
        if matches!(spec.default, AttrDefault::Required) && !seen.contains_key(spec.name) {
            diags.push(Diagnostic::error(
                op_span,
                format!(
                    "'{name}' requires attribute '{}' ({})",
                    spec.name,
                    expectation(spec.kind)
                ),
            ));
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
            ScalarKind::Float => match parse_float(&s.text, ElementType::F64) {
                Some(v) if v.is_infinite() && !s.text.contains("inf") => Err((
                    s.span,
                    format!("has a float ({}) that overflows f64", s.text),
                )),
                Some(v) => Ok(Attribute::Float(v)),
                None => Err((s.span, format!("has an invalid float ({})", s.text))),
            },
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
    match (kind, value) {
        (AttrKind::Int, v @ Attribute::Int(_)) => Ok(v),
        (AttrKind::Float, Attribute::Int(v)) => Ok(Attribute::Float(v as f64)),
        (AttrKind::Float | AttrKind::Number, v @ Attribute::Float(_)) => Ok(v),
        (AttrKind::Number, v @ Attribute::Int(_)) => Ok(v),
        (AttrKind::Bool, v @ Attribute::Bool(_)) => Ok(v),
        (AttrKind::Enum(names) | AttrKind::IntListOrEnum(names), Attribute::Str(s))
            if names.contains(&s.as_str()) =>
        {
            Ok(Attribute::Str(s))
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
        (_, v) => {
            let article = if matches!(v, Attribute::Int(_)) {
                "an"
            } else {
                "a"
            };
            Err((
                ast.span(),
                format!(
                    "must be {}, but is {article} {} ({v})",
                    expectation(kind),
                    v.kind_name()
                ),
            ))
        }
    }
}

/// What an attribute of `kind` must be, as the end of "must be ...".
fn expectation(kind: AttrKind) -> String {
    let quoted = |names: &[&str]| {
        names
            .iter()
            .map(|n| format!("\"{n}\""))
            .collect::<Vec<_>>()
            .join(", ")
    };
    match kind {
        AttrKind::Int => "an integer".into(),
        AttrKind::Float => "a float".into(),
        AttrKind::Number => "a number".into(),
        AttrKind::Bool => "a boolean".into(),
        AttrKind::Enum(names) => format!("one of {}", quoted(names)),
        AttrKind::IntList => "a list of integers".into(),
        AttrKind::IntListOrEnum(names) => {
            format!("a list of integers or one of {}", quoted(names))
        }
    }
}
