//! Locations both ways: a `.tsr` span as an MLIR location (`"%h"("model.tsr":4:3)`), and an
//! MLIR diagnostic back as a tessera diagnostic at that place.

use crate::diag::Diagnostic;
use crate::mlir::context::MlirDiagnostic;
use crate::source::{SourceFile, Span};
use melior::ir::Location;
use melior::Context;

/// The MLIR location of `span` in `file`: a `FileLineColLoc`, inside a `NameLoc` carrying the
/// value name when there is one.
pub fn op_location<'c>(
    context: &'c Context,
    file: &SourceFile,
    span: Span,
    name: Option<&str>,
) -> Location<'c> {
    let position = file.line_col(span.start);
    let location = Location::new(context, file.name(), position.line, position.col);
    match name {
        Some(name) => Location::name(context, &format!("%{name}"), location),
        None => location,
    }
}

/// MLIR diagnostics as tessera diagnostics, placed at the `file:line:col` in their location
/// (the last one, the innermost), or at the start of the file when they have none. Notes
/// MLIR attaches come as separate diagnostics; they become notes of the error before them.
pub fn located_diagnostics(diagnostics: &[MlirDiagnostic], file: &SourceFile) -> Vec<Diagnostic> {
    let mut out: Vec<Diagnostic> = Vec::new();
    for d in diagnostics {
        let span = span_of(&d.location, file);
        match (d.severity, out.last_mut()) {
            ("note", Some(last)) => last.notes.push(Diagnostic {
                severity: crate::diag::Severity::Note,
                span,
                message: d.message.clone(),
                notes: Vec::new(),
            }),
            _ => out.push(Diagnostic::error(span, d.message.clone())),
        }
    }
    out
}

/// The span at the last `:line:col` of an MLIR location's text.
fn span_of(location: &str, file: &SourceFile) -> Span {
    let numbers: Vec<usize> = location
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|s| s.parse().ok())
        .collect();
    let (line, col) = match numbers.as_slice() {
        [.., line, col] if *line >= 1 && *line <= file.line_count() => (*line, *col),
        _ => return Span::at(0),
    };
    let start = file.line_start(line - 1);
    let offset = file
        .line_text(line - 1)
        .char_indices()
        .nth(col.saturating_sub(1))
        .map_or(0, |(i, _)| i);
    Span::at(start + offset)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_mlir_locations_back() {
        let file = SourceFile::new("m.tsr", "func @f() {\n  %h = x.y\n}\n");
        let d = MlirDiagnostic {
            severity: "error",
            location: "loc(\"%h\"(\"m.tsr\":2:3))".into(),
            message: "bad".into(),
        };
        let out = located_diagnostics(&[d], &file);
        assert_eq!(file.line_col(out[0].span.start).to_string(), "2:3");
        assert_eq!(out[0].message, "bad");
    }
}
