//! The regression corpus: every function of every program in `testdata/regressions` (each
//! once crashed, hung or miscompiled, as its header says) compiles in every configuration,
//! runs, and agrees with the reference interpreter.

use crate::common::{load_text, tsr_files};
use crate::compile_check::check_everywhere;

#[test]
fn every_regression_compiles_everywhere_and_agrees_with_the_reference() {
    let mut failures = Vec::new();
    let files = tsr_files("testdata/regressions");
    assert!(
        files.len() >= 7,
        "testdata/regressions holds {} programs",
        files.len()
    );
    for path in files {
        let text = std::fs::read_to_string(&path).expect("regression is readable");
        let stem = path
            .file_stem()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        let module = load_text(&stem, text.as_bytes())
            .unwrap_or_else(|e| panic!("{stem} is not valid:\n{e}"));
        for func in &module.funcs {
            failures.extend(check_everywhere(
                &text,
                &format!("regression-{stem}-{}", func.name),
                &func.name,
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
