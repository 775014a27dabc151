//! Written literals to [`DenseValue`]s of a given tensor type: `dense<...>` nesting that
//! matches the shape with elements that fit the element type, `external<...>` tensors of
//! exactly that type in their side file.

use crate::attr::{DenseValue, ExternalTensor, Scalar};
use crate::diag::Diagnostic;
use crate::number::parse_float;
use crate::syntax::ast::{AstDense, AstExternal, AstLiteral, AstScalar, ScalarKind};
use crate::types::{ElementClass, ElementType, TensorType};
use crate::weights::TensorStore;

/// The tensor `ast` refers to, read from `store`, which must have type `ty`.
pub fn external_value(
    ast: &AstExternal,
    ty: &TensorType,
    store: &dyn TensorStore,
) -> Result<DenseValue, Diagnostic> {
    let (file, key) = (&ast.file.0, &ast.key.0);
    let stored = store
        .tensor(file, key)
        .map_err(|why| Diagnostic::error(ast.span, why))?;
    if stored.ty != *ty {
        return Err(Diagnostic::error(
            ast.key.1,
            format!(
                "tensor '{key}' of '{file}' is {}, but the result type is {ty}",
                stored.ty
            ),
        ));
    }
    Ok(DenseValue::External(ExternalTensor {
        file: file.clone(),
        key: key.clone(),
        element: ty.element,
        bytes: stored.bytes,
    }))
}

/// The value of `ast` as a tensor of type `ty`.
pub fn dense_value(ast: &AstDense, ty: &TensorType) -> Result<DenseValue, Diagnostic> {
    match &ast.body {
        AstLiteral::Scalar(s) => scalar(s, ty.element).map(DenseValue::Splat),
        list @ AstLiteral::List(..) => {
            let mut elements = Vec::new();
            nested(list, &ty.shape, ty, &mut elements)?;
            Ok(DenseValue::Elements(elements))
        }
    }
}

/// Appends the elements of `ast`, which must have exactly `shape`, in row-major order.
fn nested(
    ast: &AstLiteral,
    shape: &[u64],
    ty: &TensorType,
    out: &mut Vec<Scalar>,
) -> Result<(), Diagnostic> {
    let depth = ty.rank() - shape.len();
    match (ast, shape.split_first()) {
        (AstLiteral::Scalar(s), None) => {
            out.push(scalar(s, ty.element)?);
            Ok(())
        }
        (AstLiteral::List(items, span), Some((&dim, inner))) => {
            if items.len() as u64 != dim {
                return Err(Diagnostic::error(
                    *span,
                    format!(
                        "dense literal has {} element{} at depth {depth}, but type {ty} has dimension {depth} of size {dim}",
                        items.len(),
                        if items.len() == 1 { "" } else { "s" }
                    ),
                ));
            }
            items.iter().try_for_each(|item| nested(item, inner, ty, out))
        }
        (AstLiteral::List(_, span), None) => Err(Diagnostic::error(
            *span,
            format!("dense literal nests deeper than the rank ({}) of type {ty}", ty.rank()),
        )),
        (AstLiteral::Scalar(s), Some(_)) => Err(Diagnostic::error(
            s.span,
            format!(
                "dense literal has a scalar at depth {depth}, but type {ty} has rank {}; write a list, or one scalar alone for a splat",
                ty.rank()
            ),
        )),
    }
}

/// One element converted to `element`, or why it does not fit.
fn scalar(ast: &AstScalar, element: ElementType) -> Result<Scalar, Diagnostic> {
    let mismatch = |what: &str| {
        Diagnostic::error(
            ast.span,
            format!(
                "{what} literal ({}) is not a valid {element} element",
                ast.text
            ),
        )
    };
    match (element.class(), ast.kind) {
        (ElementClass::Float, ScalarKind::Float | ScalarKind::Int) => {
            let value = parse_float(&ast.text, element).ok_or_else(|| mismatch("float"))?;
            let infinite = ast.text.contains("inf");
            let nan = ast.text == "nan";
            // A finite literal past the largest number becomes infinity or, in the 8-bit
            // formats without infinities, NaN; those formats and f4E2M1FN lack some specials.
            let problem = if !infinite && !nan && !value.is_finite() {
                Some(format!("float literal ({}) overflows {element}", ast.text))
            } else if (infinite && !value.is_infinite()) || (nan && !value.is_nan()) {
                let special = if nan { "NaN" } else { "infinities" };
                Some(format!(
                    "float literal ({}) is not a {element} element: {element} has no {special}",
                    ast.text
                ))
            } else {
                None
            };
            match problem {
                Some(message) => Err(Diagnostic::error(ast.span, message)),
                None => Ok(Scalar::Float(value)),
            }
        }
        (ElementClass::Int, ScalarKind::Int) => {
            let (min, max) = element.int_bounds();
            let value = ast
                .text
                .parse::<i128>()
                .ok()
                .filter(|v| (min..=max).contains(v));
            value
                .map(|v| Scalar::Int(element.wrap_int(v)))
                .ok_or_else(|| {
                    Diagnostic::error(
                        ast.span,
                        format!("integer literal ({}) does not fit in {element}", ast.text),
                    )
                })
        }
        (ElementClass::Bool, ScalarKind::Bool) => Ok(Scalar::Bool(ast.text == "true")),
        (_, ScalarKind::Float) => Err(mismatch("float")),
        (_, ScalarKind::Int) => Err(mismatch("integer")),
        (_, ScalarKind::Bool) => Err(mismatch("boolean")),
    }
}
