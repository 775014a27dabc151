//! Compiles the C++ of every room of `src/mlir/` (its `cxx/` folder: the bridge's walking
//! helpers, the shared stages' passes, a target's passes and back end) against the MLIR 19
//! headers, when the `mlir` feature is on.

use std::path::PathBuf;
use std::process::Command;

fn main() {
    let sources = cxx_sources();
    println!("cargo:rerun-if-env-changed=MLIR_SYS_190_PREFIX");
    if std::env::var_os("CARGO_FEATURE_MLIR").is_none() {
        return;
    }
    let prefix = PathBuf::from(
        std::env::var("MLIR_SYS_190_PREFIX").unwrap_or_else(|_| "/usr/lib/llvm-19".to_string()),
    );
    let llvm_config = prefix.join("bin").join("llvm-config");
    let output = Command::new(&llvm_config)
        .arg("--cxxflags")
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", llvm_config.display()));
    assert!(
        output.status.success(),
        "{} --cxxflags failed",
        llvm_config.display()
    );
    let flags = String::from_utf8_lossy(&output.stdout).into_owned();
    let mut build = cc::Build::new();
    build.cpp(true).warnings(false).files(&sources);
    for flag in flags.split_whitespace() {
        build.flag(flag);
    }
    build.compile("tessera_mlir_passes");
}

/// The C++ sources, `src/mlir/<room>/cxx/*.cpp`, in a stable order; a change to any file of
/// those folders (headers too) rebuilds them.
fn cxx_sources() -> Vec<PathBuf> {
    let mut sources = Vec::new();
    // A new room (or a room's new `cxx/`) changes the folder above it.
    println!("cargo:rerun-if-changed=src/mlir");
    let rooms = std::fs::read_dir("src/mlir").expect("src/mlir is readable");
    for cxx in rooms.flatten().map(|room| room.path().join("cxx")) {
        println!(
            "cargo:rerun-if-changed={}",
            cxx.parent().unwrap_or(&cxx).display()
        );
        let Ok(files) = std::fs::read_dir(&cxx) else {
            continue;
        };
        println!("cargo:rerun-if-changed={}", cxx.display());
        for file in files.flatten().map(|f| f.path()) {
            println!("cargo:rerun-if-changed={}", file.display());
            if file.extension().is_some_and(|e| e == "cpp") {
                sources.push(file);
            }
        }
    }
    sources.sort();
    sources
}
