//! Oracles no one here wrote: upstream `mlir-opt --verify-each` accepts the MLIR of every
//! model, and insta holds that MLIR so changes to the conversion are reviewed.

use crate::common::{relative, tsr_files};
use std::io::Write;
use std::process::{Command, Stdio};
use tessera::frontend::{decode, load};
use tessera::mlir::bridge::convert::convert_module;
use tessera::mlir::MlirContext;
use tessera_tools::registry;

const MLIR_OPT: &str = "/usr/lib/llvm-19/bin/mlir-opt";

/// The converted MLIR of every model, by relative path.
fn converted_models() -> Vec<(String, String)> {
    let registry = registry();
    let context = MlirContext::new();
    tsr_files("testdata/models")
        .into_iter()
        .map(|path| {
            let name = relative(&path);
            let bytes = std::fs::read(&path).expect("model is readable");
            let (file, _) = decode(&name, &bytes);
            let module = load(&file, 0..file.text().len(), &registry).expect("models are valid");
            let mlir = convert_module(&context, &module, &file)
                .unwrap_or_else(|d| panic!("{name}: {d:?}"));
            (name, mlir.as_operation().to_string())
        })
        .collect()
}

#[test]
fn mlir_opt_accepts_every_converted_model() {
    assert!(
        std::path::Path::new(MLIR_OPT).exists(),
        "{MLIR_OPT} is missing: run scripts/setup.sh"
    );
    for (name, text) in converted_models() {
        let mut child = Command::new(MLIR_OPT)
            .args(["--verify-each", "-o", "/dev/null", "-"])
            .stdin(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("mlir-opt starts");
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(text.as_bytes())
            .expect("mlir-opt reads");
        let out = child.wait_with_output().expect("mlir-opt finishes");
        assert!(
            out.status.success(),
            "mlir-opt rejects {name}:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn converted_mlir_of_every_model() {
    for (name, text) in converted_models() {
        let file = name.rsplit('/').next().unwrap_or(&name).to_string();
        insta::with_settings!({ snapshot_suffix => file, input_file => name.clone() }, {
            insta::assert_snapshot!(text);
        });
    }
}
