//! The core names no concrete op: the crate graph keeps dialects out of `tessera`, and this
//! test keeps their op names out of its sources too.

use crate::common::root;
use tessera_tools::registry;

fn rust_files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("readable").flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs" || e == "pest") {
            out.push(path);
        }
    }
}

#[test]
fn core_sources_name_no_registered_op() {
    let mut files = Vec::new();
    rust_files(&root().join("src"), &mut files);
    let registry = registry();
    for file in files {
        let text = std::fs::read_to_string(&file).expect("readable");
        for op in registry.op_names() {
            assert!(!text.contains(op), "{} names the op '{op}'", file.display());
        }
    }
}

#[test]
fn core_manifest_depends_on_no_dialect() {
    let manifest = std::fs::read_to_string(root().join("Cargo.toml")).expect("readable");
    let dependencies = manifest
        .split("[dependencies]")
        .nth(1)
        .expect("the core has dependencies")
        .split("\n[")
        .next()
        .unwrap_or_default();
    assert!(
        !dependencies.contains("tessera-"),
        "the core depends on a dialect:\n{dependencies}"
    );
}
