//! Compiles the C++ passes and the LLVM back end (`src/mlir/cxx/`) against the MLIR 19
//! headers, when the `mlir` feature is on.

use std::path::PathBuf;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=src/mlir/cxx");
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
    build
        .cpp(true)
        .warnings(false)
        .file("src/mlir/cxx/polynomial_approximation.cpp")
        .file("src/mlir/cxx/parallel_loops.cpp")
        .file("src/mlir/cxx/epilogue_fusion.cpp")
        .file("src/mlir/cxx/deallocation.cpp")
        .file("src/mlir/cxx/shared_tensors.cpp")
        .file("src/mlir/cxx/linalg_loops.cpp")
        .file("src/mlir/cxx/function_equivalence.cpp")
        .file("src/mlir/cxx/kernel_operands.cpp")
        .file("src/mlir/cxx/subset_hoisting.cpp")
        .file("src/mlir/cxx/module_parts.cpp")
        .file("src/mlir/cxx/llvm_backend.cpp");
    for flag in flags.split_whitespace() {
        build.flag(flag);
    }
    build.compile("tessera_mlir_passes");
}
