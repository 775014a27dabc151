//! Locations both ways: a `.tsr` span as an MLIR location (`"%h"("model.tsr":4:3)`), and an
//! MLIR diagnostic back as a tessera diagnostic at that place.

use crate::diag::Diagnostic;
use crate::mlir::bridge::context::MlirDiagnostic;
use crate::source::{SourceFile, Span};
use melior::ir::Location;
use melior::Context;
use std::sync::Arc;

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
/// (the last one, the innermost), or without a place when they have none. Notes MLIR
/// attaches come as separate diagnostics; they become notes of the error before them.
pub fn located_diagnostics(diagnostics: &[MlirDiagnostic], file: &SourceFile) -> Vec<Diagnostic> {
    located_in(diagnostics, file, &[])
}

/// As [`located_diagnostics`], with locations in `others` (a schedule file) placed there.
pub fn located_in(
    diagnostics: &[MlirDiagnostic],
    file: &SourceFile,
    others: &[Arc<SourceFile>],
) -> Vec<Diagnostic> {
    let mut out: Vec<Diagnostic> = Vec::new();
    for d in diagnostics {
        let mut diagnostic = if let Some(span) = span_of(&d.location, file) {
            Diagnostic::error(span, d.message.clone())
        } else if let Some((other, span)) = others
            .iter()
            .find_map(|other| span_of(&d.location, other).map(|span| (other, span)))
        {
            Diagnostic::error_in(other.clone(), span, d.message.clone())
        } else if d.location.contains("unknown") || d.location.is_empty() {
            Diagnostic::unlocated(d.message.clone())
        } else {
            Diagnostic::unlocated(format!("{} (at {})", d.message, d.location))
        };
        match (d.severity, out.last_mut()) {
            ("note", Some(last)) => {
                diagnostic.severity = crate::diag::Severity::Note;
                last.notes.push(diagnostic);
            }
            _ => out.push(diagnostic),
        }
    }
    out
}

fn span_of(location: &str, file: &SourceFile) -> Option<Span> {
    let (before, position) = location.rsplit_once("\":")?;
    let name = before.rsplit_once('"').map_or(before, |(_, n)| n);
    if name != file.name() && name != "-" {
        return None;
    }
    let numbers: Vec<usize> = position
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|s| s.parse().ok())
        .take(2)
        .collect();
    let [line, col] = numbers[..] else {
        return None;
    };
    if line == 0 || line > file.line_count() {
        return None;
    }
    let start = file.line_start(line - 1);
    let offset = file
        .line_text(line - 1)
        .char_indices()
        .nth(col.saturating_sub(1))
        .map_or(0, |(i, _)| i);
    Some(Span::at(start + offset))
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
        let elsewhere = MlirDiagnostic {
            severity: "error",
            location: "loc(\"s.mlir\":5:19)".into(),
            message: "failed".into(),
        };
        let out = located_diagnostics(&[elsewhere], &file);
        assert_eq!(out[0].message, "failed (at loc(\"s.mlir\":5:19))");
    }
}
