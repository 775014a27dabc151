//! Round trip over every valid `.tsr` file: `parse(print(m)) == m`, and printing is a fixpoint.

use crate::common::{load_text, print, tsr_files};

/// Checks the round-trip contract on `text`.
pub fn assert_round_trip(name: &str, text: &str) {
    let module =
        load_text(name, text.as_bytes()).unwrap_or_else(|e| panic!("{name} is invalid:\n{e}"));
    let printed = print(&module);
    let reparsed = load_text(name, printed.as_bytes())
        .unwrap_or_else(|e| panic!("the print of {name} does not parse:\n{e}\n{printed}"));
    assert_eq!(reparsed, module, "{name}: parse(print(m)) != m\n{printed}");
    assert_eq!(print(&reparsed), printed, "{name}: print is not a fixpoint");
}

#[test]
fn every_model_round_trips() {
    let files = tsr_files("testdata/models");
    assert!(
        files.len() >= 12,
        "testdata/models holds {} models",
        files.len()
    );
    for path in files {
        let text = std::fs::read_to_string(&path).expect("model is readable");
        assert_round_trip(&path.display().to_string(), &text);
    }
}
