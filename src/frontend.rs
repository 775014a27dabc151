//! The front end in one call: source bytes to a verified module, or every diagnostic.

use crate::diag::Diagnostic;
use crate::dialect::Registry;
use crate::ir::Module;
use crate::source::{SourceFile, Span};
use crate::syntax::parser::parse_module;
use crate::verify::verify;
use crate::weights::{SideFiles, TensorStore};
use std::ops::Range;

/// Decodes `bytes` read from `name`. Invalid UTF-8 or a NUL byte is an error at its place;
/// the returned file then holds the text with such bytes replaced, for rendering.
pub fn decode(name: &str, bytes: &[u8]) -> (SourceFile, Option<Diagnostic>) {
    match std::str::from_utf8(bytes) {
        Ok(text) => {
            let file = SourceFile::new(name, text);
            let nul = text
                .find('\0')
                .map(|at| Diagnostic::error(Span::new(at, at + 1), "source contains a NUL byte"));
            (file, nul)
        }
        Err(error) => {
            let at = error.valid_up_to();
            let file = SourceFile::new(name, String::from_utf8_lossy(bytes).into_owned());
            let diag = Diagnostic::error(
                Span::new(at, at + 1),
                format!(
                    "source is not valid UTF-8 (invalid byte 0x{:02x} at offset {at})",
                    bytes[at]
                ),
            );
            (file, Some(diag))
        }
    }
}

/// Parses and verifies `range` of `file`, its `external<...>` literals read from the side
/// files in the folder of the file's name ([`SideFiles::beside`]). Syntax errors stop before
/// verification (a half-parsed module would only produce follow-on errors).
pub fn load(
    file: &SourceFile,
    range: Range<usize>,
    registry: &Registry,
) -> Result<Module, Vec<Diagnostic>> {
    load_with(file, range, registry, &SideFiles::beside(file.name()))
}

/// [`load`], with `external<...>` literals read from `store`.
pub fn load_with(
    file: &SourceFile,
    range: Range<usize>,
    registry: &Registry,
    store: &dyn TensorStore,
) -> Result<Module, Vec<Diagnostic>> {
    let (ast, syntax_errors) = parse_module(file, range);
    if !syntax_errors.is_empty() {
        return Err(syntax_errors);
    }
    verify(&ast, registry, store)
}

/// Splits `text` at lines that are exactly `// -----` (as `mlir-opt --split-input-file`),
/// returning the byte range of each chunk. Line numbers stay those of the whole file.
pub fn split_chunks(text: &str) -> Vec<Range<usize>> {
    let mut chunks = Vec::new();
    let mut start = 0;
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        if line.trim_end() == SPLIT_MARKER {
            chunks.push(start..offset);
            start = offset + line.len();
        }
        offset += line.len();
    }
    chunks.push(start..text.len());
    chunks
}

/// The line that separates chunks with `--split-input-file`.
pub const SPLIT_MARKER: &str = "// -----";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_on_marker_lines_only() {
        let text = "a\n// -----\nb\n  // ----- not alone\n// -----\nc";
        let chunks: Vec<&str> = split_chunks(text).into_iter().map(|r| &text[r]).collect();
        assert_eq!(chunks, ["a\n", "b\n  // ----- not alone\n", "c"]);
    }

    #[test]
    fn reports_invalid_utf8_and_nul() {
        let (_, diag) = decode("f", b"ab\xffc");
        assert!(diag.unwrap().message.contains("0xff at offset 2"));
        let (_, diag) = decode("f", b"a\0");
        assert_eq!(diag.unwrap().span.start, 1);
    }
}
