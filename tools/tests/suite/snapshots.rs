//! insta snapshots: the canonical print of every model and the rendered diagnostics of every
//! invalid input. Review changes with `cargo insta review`; CI (`CI=true`) fails on any.

use crate::common::{load_text, print, relative};

#[test]
fn canonical_print_of_every_model() {
    insta::glob!("../../../testdata/models", "*.tsr", |path| {
        let name = relative(path);
        let bytes = std::fs::read(path).expect("model is readable");
        let module = load_text(&name, &bytes).unwrap_or_else(|e| panic!("{name} is invalid:\n{e}"));
        insta::assert_snapshot!(print(&module));
    });
}

#[test]
fn diagnostics_of_every_invalid_input() {
    insta::glob!("../../../testdata/invalid", "*.tsr", |path| {
        let name = relative(path);
        let bytes = std::fs::read(path).expect("input is readable");
        match load_text(&name, &bytes) {
            Ok(_) => panic!("{name} is accepted, but it is in testdata/invalid"),
            Err(rendered) => insta::assert_snapshot!(rendered),
        }
    });
}
