//! Written types to [`TensorType`]s: element type names, dimension sizes, element counts.

use crate::diag::Diagnostic;
use crate::infer::MAX_EXTENT;
use crate::syntax::ast::AstType;
use crate::types::{ElementType, TensorType};

/// The tensor type `ast` denotes, or why it denotes none.
pub fn tensor_type(ast: &AstType) -> Result<TensorType, Diagnostic> {
    let (name, name_span) = &ast.element;
    let element = ElementType::from_name(name).ok_or_else(|| {
        let known: Vec<&str> = ElementType::ALL.iter().map(|t| t.name()).collect();
        Diagnostic::error(
            *name_span,
            format!(
                "unknown element type '{name}' (expected one of {})",
                known.join(", ")
            ),
        )
    })?;
    let mut shape = Vec::with_capacity(ast.dims.len());
    for (digits, span) in &ast.dims {
        match digits.parse::<u64>() {
            Ok(d) if d <= MAX_EXTENT => shape.push(d),
            _ => {
                return Err(Diagnostic::error(
                    *span,
                    format!("dimension ({digits}) is too large (at most {MAX_EXTENT})"),
                ))
            }
        }
    }
    let ty = TensorType::new(shape, element);
    match ty.num_elements() {
        Some(n) if n <= MAX_EXTENT => Ok(ty),
        _ => Err(Diagnostic::error(
            ast.span,
            format!("tensor type {ty} has too many elements (more than {MAX_EXTENT})"),
        )),
    }
}
