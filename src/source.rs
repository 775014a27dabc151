//! Source text, byte spans into it, and their line/column positions.

use std::fmt;

/// A half-open byte range `[start, end)` into a [`SourceFile`].
///
/// Spans do not take part in structural equality: two IR objects are equal when they mean
/// the same, wherever their text sits, so `parse(print(m)) == m` can hold.
#[derive(Clone, Copy, Debug, Default)]
pub struct Span {
    /// First byte.
    pub start: usize,
    /// One past the last byte.
    pub end: usize,
}

impl Span {
    /// The span `[start, end)`.
    pub fn new(start: usize, end: usize) -> Span {
        Span { start, end }
    }

    /// The empty span at `offset`.
    pub fn at(offset: usize) -> Span {
        Span::new(offset, offset)
    }

    /// The smallest span covering both.
    pub fn to(self, other: Span) -> Span {
        Span::new(self.start.min(other.start), self.end.max(other.end))
    }
}

impl PartialEq for Span {
    fn eq(&self, _: &Span) -> bool {
        true
    }
}

impl Eq for Span {}

/// A named source text with a line index.
#[derive(Clone, Debug)]
pub struct SourceFile {
    name: String,
    text: String,
    line_starts: Vec<usize>,
}

/// A 1-based line and column (column counted in characters).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LineCol {
    /// 1-based line number.
    pub line: usize,
    /// 1-based column, in characters.
    pub col: usize,
}

impl fmt::Display for LineCol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.line, self.col)
    }
}

impl SourceFile {
    /// Wraps `text`, read from `name` (a path, or `<stdin>`).
    pub fn new(name: impl Into<String>, text: impl Into<String>) -> SourceFile {
        let text = text.into();
        let line_starts = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        SourceFile {
            name: name.into(),
            text,
            line_starts,
        }
    }

    /// The name diagnostics print for this file.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The whole text.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The text under `span`.
    pub fn slice(&self, span: Span) -> &str {
        &self.text[span.start..span.end]
    }

    /// 0-based index of the line holding byte `offset`.
    pub fn line_index(&self, offset: usize) -> usize {
        self.line_starts.partition_point(|&s| s <= offset) - 1
    }

    /// Line and column of byte `offset`.
    pub fn line_col(&self, offset: usize) -> LineCol {
        let line = self.line_index(offset);
        let start = self.line_starts[line];
        let col = self.text[start..offset.min(self.text.len())]
            .chars()
            .count()
            + 1;
        LineCol {
            line: line + 1,
            col,
        }
    }

    /// The text of 0-based line `index`, without its line break.
    pub fn line_text(&self, index: usize) -> &str {
        let start = self.line_starts[index];
        let end = self
            .line_starts
            .get(index + 1)
            .map_or(self.text.len(), |&next| next - 1);
        self.text[start..end].trim_end_matches('\r')
    }

    /// Number of lines.
    pub fn line_count(&self) -> usize {
        self.line_starts.len()
    }

    /// Byte offset where 0-based line `index` starts.
    pub fn line_start(&self, index: usize) -> usize {
        self.line_starts[index]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_and_column_count_characters() {
        let file = SourceFile::new("t", "ab\n€x\n");
        assert_eq!(file.line_col(0), LineCol { line: 1, col: 1 });
        assert_eq!(file.line_col(3), LineCol { line: 2, col: 1 });
        assert_eq!(file.line_col(6), LineCol { line: 2, col: 2 });
        assert_eq!(file.line_text(1), "€x");
        assert_eq!(file.line_count(), 3);
    }
}
