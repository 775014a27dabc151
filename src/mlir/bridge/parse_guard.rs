//! Constructs MLIR 19's parser crashes on, found in MLIR text before that parser sees it and
//! reported as errors. The custom syntax of `linalg.transpose` (`permutation = [...]`),
//! `linalg.broadcast` and `linalg.reduce` (`dimensions = [...]`) stores a null attribute
//! when the list is malformed (`permutation = ([1, 0]`, `= (1, 0)`, `=` then nothing) and
//! dereferences it: a segmentation fault, in `mlir-opt` too.

/// The keywords whose list MLIR's custom parsers read.
const LIST_KEYWORDS: &[&str] = &["permutation", "dimensions"];

/// A malformed list: where it starts (a byte offset) and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Malformed {
    /// The byte offset of the keyword.
    pub offset: usize,
    /// The message, MLIR style.
    pub message: String,
}

/// The first `permutation = ...` or `dimensions = ...` in `text` (outside comments and
/// strings) that is neither an integer list `[1, 0]` nor the generic form `array<i64: ...>`.
pub fn malformed_list(text: &str) -> Option<Malformed> {
    let bytes = text.as_bytes();
    let mut at = 0;
    while at < bytes.len() {
        match bytes[at] {
            b'/' if bytes.get(at + 1) == Some(&b'/') => {
                at = text[at..].find('\n').map_or(bytes.len(), |n| at + n);
            }
            b'"' => at = skip_string(bytes, at),
            c if c.is_ascii_alphabetic() => {
                let end = at
                    + text[at..]
                        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '.'))
                        .unwrap_or(text.len() - at);
                let word = &text[at..end];
                // `%permutation`, `@dimensions`: names, not keywords.
                let sigil = at > 0 && matches!(bytes[at - 1], b'%' | b'@' | b'^' | b'#' | b'!');
                if !sigil && LIST_KEYWORDS.contains(&word) {
                    if let Some(problem) = list_problem(&text[end..]) {
                        return Some(Malformed {
                            offset: at,
                            message: format!("expected '{word} = [' integers ']': {problem}"),
                        });
                    }
                }
                at = end;
            }
            _ => at += 1,
        }
    }
    None
}

/// The offset just past the string literal starting at `start`.
fn skip_string(bytes: &[u8], start: usize) -> usize {
    let mut at = start + 1;
    while at < bytes.len() {
        match bytes[at] {
            b'\\' => at += 2,
            b'"' => return at + 1,
            _ => at += 1,
        }
    }
    bytes.len()
}

/// What is wrong with the text after a list keyword, if it is `= <list>` and the list is
/// not `[int, ...]`; `None` when there is no `=` (the keyword is a name) or the list is fine.
fn list_problem(after: &str) -> Option<String> {
    let rest = after.trim_start().strip_prefix('=')?.trim_start();
    if rest.starts_with("array<") {
        return None;
    }
    let Some(inner) = rest.strip_prefix('[') else {
        let found: String = rest.chars().take_while(|&c| c != '\n').take(12).collect();
        return Some(match found.trim_end() {
            "" => "found nothing".to_string(),
            found => format!("found '{found}'"),
        });
    };
    let Some(close) = inner.find(']') else {
        return Some("the list is not closed".into());
    };
    let items = inner[..close].trim();
    let valid = items.is_empty()
        || items
            .split(',')
            .all(|item| item.trim().trim_start_matches('-').parse::<u64>().is_ok());
    (!valid).then(|| format!("'[{}]' is not a list of integers", &inner[..close]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn malformed_lists_are_found_where_they_start() {
        for (text, at) in [
            ("x permutation = ([1, 0]\n", 2),
            ("permutation = (1, 0)", 0),
            ("permutation = ", 0),
            ("  dimensions = [1, a]", 2),
            ("dimensions = [1", 0),
        ] {
            let found = malformed_list(text).unwrap_or_else(|| panic!("{text:?} passes"));
            assert_eq!(found.offset, at, "{text:?}");
        }
    }

    #[test]
    fn well_formed_lists_names_comments_and_strings_pass() {
        for text in [
            "permutation = [1, 0]",
            "dimensions = []",
            "dimensions = [-1, 2] {x}",
            "<{permutation = array<i64: 1, 0>}>",
            "// permutation = (",
            "\"permutation = (\"",
            "%permutation = arith.constant 0 : index",
            "func.func @dimensions()",
        ] {
            assert_eq!(malformed_list(text), None, "{text:?}");
        }
    }
}
