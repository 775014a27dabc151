//! Located diagnostics and their rendering as `file:line:col: error: message` with a caret.

use crate::source::{SourceFile, Span};
use std::fmt::Write;
use std::sync::Arc;

/// How serious a diagnostic is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    /// Supplementary information attached to another diagnostic.
    Note,
    /// Suspicious but accepted input.
    Warning,
    /// Rejected input.
    Error,
}

impl Severity {
    /// The word printed after the location (`error`, `warning`, `note`).
    pub fn word(self) -> &'static str {
        match self {
            Severity::Note => "note",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

/// Which text a diagnostic points into.
#[derive(Clone, Debug, Default)]
pub enum Place {
    /// The file it is rendered against (the model, or the MLIR input).
    #[default]
    Input,
    /// Another text: the pass pipeline, a schedule file.
    In(Arc<SourceFile>),
    /// No text: a problem with the command rather than with a text (a file that cannot be
    /// read). Rendered as `error: message`, without a line.
    Nowhere,
}

impl PartialEq for Place {
    fn eq(&self, other: &Place) -> bool {
        match (self, other) {
            (Place::In(a), Place::In(b)) => a.name() == b.name() && a.text() == b.text(),
            (Place::Input, Place::Input) | (Place::Nowhere, Place::Nowhere) => true,
            _ => false,
        }
    }
}

impl Eq for Place {}

/// One message about a place in the source, with optional notes at other places.
///
/// Wording follows MLIR: lower-case, no final period, actual values in parentheses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    /// Error, warning or note.
    pub severity: Severity,
    /// The culprit.
    pub span: Span,
    /// What is wrong.
    pub message: String,
    /// Related places (a previous definition, a callee's signature).
    pub notes: Vec<Diagnostic>,
    /// Which text `span` is in.
    pub place: Place,
}

impl Diagnostic {
    /// An error at `span` of the input.
    pub fn error(span: Span, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            severity: Severity::Error,
            span,
            message: message.into(),
            notes: Vec::new(),
            place: Place::Input,
        }
    }

    /// An error at `span` of `file`, a text other than the input (the pass pipeline).
    pub fn error_in(file: Arc<SourceFile>, span: Span, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            place: Place::In(file),
            ..Diagnostic::error(span, message)
        }
    }

    /// An error in no text: about the command (a file that cannot be read).
    pub fn unlocated(message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            place: Place::Nowhere,
            ..Diagnostic::error(Span::at(0), message)
        }
    }

    /// Attaches a note at `span` (in the same text as this diagnostic).
    pub fn with_note(mut self, span: Span, message: impl Into<String>) -> Diagnostic {
        self.notes.push(Diagnostic {
            severity: Severity::Note,
            place: self.place.clone(),
            ..Diagnostic::error(span, message)
        });
        self
    }

    /// Renders this diagnostic and its notes against `file`, each as
    /// `file:line:col: severity: message`, the source line and a caret under the culprit.
    pub fn render(&self, file: &SourceFile) -> String {
        let mut out = String::new();
        self.render_into(file, &mut out);
        out
    }

    fn render_into(&self, input: &SourceFile, out: &mut String) {
        let file = match &self.place {
            Place::Input => input,
            Place::In(file) => file,
            Place::Nowhere => {
                let _ = writeln!(out, "{}: {}", self.severity.word(), self.message);
                for note in &self.notes {
                    note.render_into(input, out);
                }
                return;
            }
        };
        let pos = file.line_col(self.span.start);
        let _ = writeln!(
            out,
            "{}:{}: {}: {}",
            file.name(),
            pos,
            self.severity.word(),
            self.message
        );
        let line_index = file.line_index(self.span.start);
        let line = file.line_text(line_index);
        let line_start = file.line_start(line_index);
        let end_on_line = (self.span.end.max(self.span.start + 1) - line_start)
            .min(line.len())
            .max(self.span.start - line_start);
        let width = line
            .get(self.span.start - line_start..end_on_line)
            .map_or(1, |s| s.chars().count().max(1));
        let indent: String = line
            .chars()
            .take(pos.col - 1)
            .map(|c| if c == '\t' { '\t' } else { ' ' })
            .collect();
        // Control characters (a NUL byte) would garble the terminal: show them as U+FFFD.
        let shown: String = line
            .chars()
            .map(|c| {
                if c.is_control() && c != '\t' {
                    char::REPLACEMENT_CHARACTER
                } else {
                    c
                }
            })
            .collect();
        let _ = writeln!(out, "{shown}");
        let _ = writeln!(out, "{indent}^{}", "~".repeat(width - 1));
        for note in &self.notes {
            note.render_into(input, out);
        }
    }
}

/// Renders every diagnostic against `file`, in order.
pub fn render_all(diagnostics: &[Diagnostic], file: &SourceFile) -> String {
    diagnostics.iter().map(|d| d.render(file)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_location_line_and_caret() {
        let file = SourceFile::new("m.tsr", "func @f() {\n  %a = nn.bad %x\n}\n");
        let start = file.text().find("nn.bad").unwrap();
        let diag = Diagnostic::error(Span::new(start, start + 6), "unknown op 'nn.bad'")
            .with_note(Span::at(0), "in this function");
        assert_eq!(
            diag.render(&file),
            "m.tsr:2:8: error: unknown op 'nn.bad'\n  %a = nn.bad %x\n       ^~~~~~\n\
             m.tsr:1:1: note: in this function\nfunc @f() {\n^\n"
        );
    }

    #[test]
    fn other_texts_and_no_text() {
        let model = SourceFile::new("m.tsr", "func @f() {\n}\n");
        let pipeline = Arc::new(SourceFile::new(
            "<pass-pipeline>",
            "builtin.module(cse,bad)",
        ));
        let diag = Diagnostic::error_in(pipeline, Span::new(19, 22), "unknown pass 'bad'");
        assert_eq!(
            diag.render(&model),
            "<pass-pipeline>:1:20: error: unknown pass 'bad'\nbuiltin.module(cse,bad)\n                   ^~~\n"
        );
        let diag = Diagnostic::unlocated("cannot read 's.mlir'");
        assert_eq!(diag.render(&model), "error: cannot read 's.mlir'\n");
    }

    #[test]
    fn caret_at_end_of_file_is_rendered() {
        let file = SourceFile::new("m.tsr", "func");
        let diag = Diagnostic::error(Span::at(4), "expected '@'");
        assert_eq!(
            diag.render(&file),
            "m.tsr:1:5: error: expected '@'\nfunc\n    ^\n"
        );
    }
}
