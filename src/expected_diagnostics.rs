//! `--verify-diagnostics`: checks the diagnostics of a chunk against the
//! `// expected-error @+N {{...}}` comments in it, as `mlir-opt -verify-diagnostics` does.
//!
//! An expectation names a severity (`error`, `warning`, `note`), a line (its own, or `@+N`,
//! `@-N` lines away, or `@above`/`@below`) and text that the message must contain. Every
//! diagnostic, notes included, must be expected, and every expectation met.

use crate::diag::{Diagnostic, Severity};
use crate::source::{SourceFile, Span};
use std::ops::Range;

/// One `expected-<severity> @<offset> {{text}}` comment.
#[derive(Clone, Debug)]
struct Expectation {
    severity: Severity,
    /// 0-based line the diagnostic must be on.
    line: usize,
    text: String,
    /// Where the comment is, for reporting it unmet.
    span: Span,
    met: bool,
}

/// Checks `diagnostics` (from `range` of `file`) against the expectations written in that
/// range. Returns the problems, each located: unexpected diagnostics and unmet expectations.
pub fn check_expected(
    file: &SourceFile,
    range: Range<usize>,
    diagnostics: &[Diagnostic],
) -> Vec<Diagnostic> {
    let (mut expectations, mut problems) = expectations(file, range);
    let flat = diagnostics
        .iter()
        .flat_map(|d| std::iter::once(d).chain(&d.notes));
    for diag in flat {
        let line = file.line_index(diag.span.start);
        let found = expectations.iter_mut().find(|e| {
            !e.met
                && e.severity == diag.severity
                && e.line == line
                && diag.message.contains(&e.text)
        });
        match found {
            Some(expectation) => expectation.met = true,
            None => problems.push(Diagnostic::error(
                diag.span,
                format!("unexpected {}: {}", diag.severity.word(), diag.message),
            )),
        }
    }
    for e in expectations.iter().filter(|e| !e.met) {
        problems.push(Diagnostic::error(
            e.span,
            format!(
                "expected {} \"{}\" was not produced",
                e.severity.word(),
                e.text
            ),
        ));
    }
    problems.sort_by_key(|d| d.span.start);
    problems
}

/// The expectations written in `range`, and errors for malformed ones.
fn expectations(file: &SourceFile, range: Range<usize>) -> (Vec<Expectation>, Vec<Diagnostic>) {
    let mut found = Vec::new();
    let mut problems = Vec::new();
    let first = file.line_index(range.start);
    let last = file.line_index(range.end.saturating_sub(1).max(range.start));
    for line in first..=last {
        let text = file.line_text(line);
        let mut rest = text;
        while let Some(at) = rest.find("expected-") {
            let start = file.line_start(line) + (text.len() - rest.len()) + at;
            rest = &rest[at + "expected-".len()..];
            match parse_expectation(rest, line, last) {
                Ok((severity, target, body, used)) => {
                    found.push(Expectation {
                        severity,
                        line: target,
                        text: body,
                        span: Span::new(start, start + "expected-".len()),
                        met: false,
                    });
                    rest = &rest[used..];
                }
                Err(Some(message)) => {
                    problems.push(Diagnostic::error(Span::new(start, start + 1), message))
                }
                Err(None) => {}
            }
        }
    }
    (found, problems)
}

/// Parses `error @+1 {{text}}` (after `expected-`). `Err(None)`: not an expectation at all
/// (the word appears in prose); `Err(Some)`: a malformed one.
fn parse_expectation(
    text: &str,
    line: usize,
    last: usize,
) -> Result<(Severity, usize, String, usize), Option<String>> {
    let (severity, after) = [
        ("error", Severity::Error),
        ("warning", Severity::Warning),
        ("note", Severity::Note),
    ]
    .into_iter()
    .find_map(|(word, severity)| text.strip_prefix(word).map(|after| (severity, after)))
    .ok_or(None)?;
    let trimmed = after.trim_start();
    let (target, after_target) = match trimmed.strip_prefix('@') {
        Some(spec) => {
            let end = spec
                .find(|c: char| c.is_whitespace() || c == '{')
                .unwrap_or(spec.len());
            let target = match &spec[..end] {
                "above" => line.checked_sub(1),
                "below" => Some(line + 1),
                offset => offset
                    .parse::<i64>()
                    .ok()
                    .and_then(|n| line.checked_add_signed(n as isize)),
            };
            let target = target.filter(|&t| t <= last).ok_or_else(|| {
                Some(format!(
                    "expected-{} names a line outside the input (@{})",
                    severity.word(),
                    &spec[..end]
                ))
            })?;
            (target, &spec[end..])
        }
        None => (line, trimmed),
    };
    let body = after_target.trim_start();
    let inner = body
        .strip_prefix("{{")
        .and_then(|b| b.find("}}").map(|end| &b[..end]))
        .ok_or_else(|| {
            Some(format!(
                "expected-{} needs its text in {{{{...}}}}",
                severity.word()
            ))
        })?;
    let used = text.len() - body.len() + 2 + inner.len() + 2;
    Ok((severity, target, inner.to_string(), used))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(text: &str, diags: Vec<Diagnostic>) -> Vec<String> {
        let file = SourceFile::new("t", text);
        check_expected(&file, 0..text.len(), &diags)
            .into_iter()
            .map(|d| d.message)
            .collect()
    }

    #[test]
    fn matches_relative_and_same_line_expectations() {
        let text = "// expected-error @+1 {{bad thing}}\nline two\nline three // expected-error {{other}}\n";
        let at = |line: &str| text.find(line).unwrap();
        let diags = vec![
            Diagnostic::error(Span::at(at("line two")), "a bad thing (1)"),
            Diagnostic::error(Span::at(at("line three")), "the other one"),
        ];
        assert!(check(text, diags).is_empty());
    }

    #[test]
    fn reports_unexpected_and_unmet() {
        let text = "// expected-error @+1 {{missing}}\nx\n";
        let diags = vec![Diagnostic::error(Span::at(0), "surprise")];
        assert_eq!(
            check(text, diags),
            [
                "unexpected error: surprise",
                "expected error \"missing\" was not produced"
            ]
        );
    }

    #[test]
    fn notes_must_be_expected_too() {
        let text = "x // expected-error {{e}}\n";
        let diag = Diagnostic::error(Span::at(0), "e").with_note(Span::at(0), "n");
        assert_eq!(check(text, vec![diag]), ["unexpected note: n"]);
    }

    #[test]
    fn malformed_expectation_is_reported() {
        assert_eq!(
            check("// expected-error @+9 {{x}}\n", vec![]),
            ["expected-error names a line outside the input (@+9)"]
        );
        assert_eq!(
            check("// expected-error oops\n", vec![]),
            ["expected-error needs its text in {{...}}"]
        );
    }
}
