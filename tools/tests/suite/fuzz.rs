//! Fuzz-style tests: no input, however malformed, makes the front end panic. Random bytes,
//! random token soup, and mutations of every valid model; a mutant that is still valid must
//! round-trip.

use crate::common::{load_text, tsr_files};
use crate::roundtrip::assert_round_trip;
use proptest::prelude::*;

/// Pieces of the language, so random sequences get past the first token.
const TOKENS: &[&str] = &[
    "func",
    "@f",
    "@g",
    "(",
    ")",
    "{",
    "}",
    "->",
    ":",
    ",",
    "=",
    "%x",
    "%y",
    "%0",
    "return",
    "call",
    "tensor<4x8xf32>",
    "tensor<f32>",
    "tensor<",
    ">",
    "x",
    "f32",
    "i1",
    "nn.dense",
    "nn.relu",
    "array.add",
    "array.constant",
    "nn.conv2d",
    "array.matmul",
    "dense<",
    "[",
    "]",
    "1.5",
    "-3",
    "99999999999999999999",
    "1e400",
    "nan",
    "true",
    "\"same\"",
    "axis",
    "perm",
    "//",
    "\n",
    " ",
    "// -----",
    "\0",
    "é",
];

fn models() -> Vec<String> {
    tsr_files("testdata/models")
        .into_iter()
        .map(|p| std::fs::read_to_string(p).expect("model is readable"))
        .collect()
}

/// One edit of a text.
#[derive(Clone, Debug)]
enum Mutation {
    Delete(usize, usize),
    Insert(usize, &'static str),
    Duplicate(usize, usize),
    SwapLines(usize, usize),
    Truncate(usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), 1usize..20).prop_map(|(a, n)| Mutation::Delete(a, n)),
        (any::<usize>(), prop::sample::select(TOKENS)).prop_map(|(a, t)| Mutation::Insert(a, t)),
        (any::<usize>(), 1usize..40).prop_map(|(a, n)| Mutation::Duplicate(a, n)),
        (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Mutation::SwapLines(a, b)),
        any::<usize>().prop_map(Mutation::Truncate),
    ]
}

/// Applies `m` to `bytes`, positions taken modulo the length.
fn apply(bytes: &mut Vec<u8>, m: &Mutation) {
    let len = bytes.len().max(1);
    match *m {
        Mutation::Delete(at, n) => {
            let at = at % len;
            let end = (at + n).min(bytes.len());
            bytes.drain(at.min(end)..end);
        }
        Mutation::Insert(at, token) => {
            let at = at % (bytes.len() + 1);
            bytes.splice(at..at, token.bytes());
        }
        Mutation::Duplicate(at, n) => {
            let at = at % len;
            let end = (at + n).min(bytes.len());
            let copy: Vec<u8> = bytes[at.min(end)..end].to_vec();
            bytes.splice(at..at, copy);
        }
        Mutation::SwapLines(a, b) => {
            let text = String::from_utf8_lossy(bytes).into_owned();
            let mut lines: Vec<&str> = text.lines().collect();
            if !lines.is_empty() {
                let n = lines.len();
                lines.swap(a % n, b % n);
                *bytes = lines.join("\n").into_bytes();
            }
        }
        Mutation::Truncate(at) => bytes.truncate(at % len),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..400)) {
        let _ = load_text("fuzz.tsr", &bytes);
    }

    #[test]
    fn token_soup_never_panics(tokens in prop::collection::vec(prop::sample::select(TOKENS), 0..80)) {
        let _ = load_text("fuzz.tsr", tokens.concat().as_bytes());
    }

    #[test]
    fn mutated_models_never_panic(index in any::<usize>(), edits in prop::collection::vec(mutation(), 1..4)) {
        let models = models();
        let mut bytes = models[index % models.len()].clone().into_bytes();
        for edit in &edits {
            apply(&mut bytes, edit);
        }
        if let (Ok(_), Ok(text)) = (load_text("mutant.tsr", &bytes), std::str::from_utf8(&bytes)) {
            assert_round_trip("mutant.tsr", text);
        }
    }
}
