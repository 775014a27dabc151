//! The `tessera-run` command line: running a model end to end, and every kind of bad input
//! giving a clear error with exit status 1.

use crate::common::root;
use std::path::PathBuf;
use std::process::{Command, Output};
use tessera::exec::npy::{read_npy, write_npy};
use tessera::exec::tensor::{Tensor, TensorData};
use tessera::types::{ElementType, TensorType};

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tessera-run"))
        .env("TESSERA_TUNING_CACHE", "")
        .args(args)
        .current_dir(root())
        .output()
        .expect("tessera-run starts")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A scratch folder for this test.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tessera-run-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch folder");
    dir
}

const SEED: &str = "testdata/models/seed_mlp.tsr";

#[test]
fn runs_the_seed_model_and_agrees_with_the_reference() {
    let out_dir = scratch("seed");
    let out = run(&[
        SEED,
        "--compare-reference",
        "--repeat",
        "3",
        "--stats",
        "--output-dir",
        out_dir.to_str().expect("utf-8"),
    ]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    for needle in [
        "output 0: tensor<64x10xf32>",
        "PASS",
        "compile:",
        "first call:",
        "steady call (3 runs)",
        "stage tessera-bufferize",
        "0 bytes left unfreed",
    ] {
        assert!(stdout.contains(needle), "missing '{needle}' in:\n{stdout}");
    }
    let written = read_npy(&std::fs::read(out_dir.join("out0.npy")).expect("out0.npy written"))
        .expect("valid npy");
    assert_eq!(written.ty, TensorType::new(vec![64, 10], ElementType::F32));
    // Softmax rows sum to 1.
    let row: f64 = (0..10).map(|i| written.get_f64(i)).sum();
    assert!((row - 1.0).abs() < 1e-5, "row sums to {row}");
}

#[test]
fn npy_inputs_are_used() {
    let dir = scratch("npy");
    let x = Tensor {
        ty: TensorType::new(vec![2], ElementType::F32),
        data: TensorData::Float(vec![-1.0, 2.0]),
    };
    let path = dir.join("x.npy");
    std::fs::write(&path, write_npy(&x).expect("writes")).expect("saved");
    let model = dir.join("relu.tsr");
    std::fs::write(&model, "func @f(%x: tensor<2xf32>) -> tensor<2xf32> {\n  %y = nn.relu %x\n  return %y : tensor<2xf32>\n}\n").expect("saved");
    let out = run(&[
        model.to_str().expect("utf-8"),
        "--input",
        &format!("x={}", path.display()),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("[0, 2]"),
        "{}",
        text(&out.stdout)
    );
}

/// Runs with `args` and expects exit status 1 and `needle` in the error.
fn fails_with(args: &[&str], needle: &str) {
    let out = run(args);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
    assert!(
        stderr.contains(needle),
        "{args:?}: expected '{needle}' in:\n{stderr}"
    );
}

#[test]
fn bad_inputs_are_clear_errors() {
    let dir = scratch("bad");
    let wrong_shape = dir.join("wrong_shape.npy");
    let t = Tensor {
        ty: TensorType::new(vec![3, 784], ElementType::F32),
        data: TensorData::Float(vec![0.0; 3 * 784]),
    };
    std::fs::write(&wrong_shape, write_npy(&t).expect("writes")).expect("saved");
    let wrong_dtype = dir.join("wrong_dtype.npy");
    let t = Tensor {
        ty: TensorType::new(vec![64, 784], ElementType::F64),
        data: TensorData::Float(vec![0.0; 64 * 784]),
    };
    std::fs::write(&wrong_dtype, write_npy(&t).expect("writes")).expect("saved");
    let corrupt = dir.join("corrupt.npy");
    std::fs::write(&corrupt, b"\x93NUMPY\x01\x00garbage").expect("saved");

    let spec = |p: &PathBuf| format!("x={}", p.display());
    fails_with(
        &[SEED, "--input", &spec(&wrong_shape)],
        "argument 'x' has type tensor<64x784xf32>, but",
    );
    fails_with(
        &[SEED, "--input", &spec(&wrong_dtype)],
        "holds tensor<64x784xf64>",
    );
    fails_with(
        &[SEED, "--input", "x=no/such.npy"],
        "cannot read 'no/such.npy'",
    );
    fails_with(&[SEED, "--input", &spec(&corrupt)], "corrupt.npy");
    fails_with(
        &[SEED, "--input", "nope=random:1"],
        "has no argument 'nope' (arguments: x: tensor<64x784xf32>",
    );
    fails_with(&[SEED, "--input", "x=random:abc"], "is not random[:SEED]");
    fails_with(
        &[SEED, "--entry", "main"],
        "no function '@main' in the model (functions: @mlp)",
    );
    fails_with(&["testdata/models/calls.tsr"], "choose one with --entry");
    fails_with(
        &["testdata/invalid/undefined_value.tsr"],
        "error: use of undefined value",
    );
    fails_with(&["no/such/model.tsr"], "cannot read 'no/such/model.tsr'");
    let huge = dir.join("huge.tsr");
    std::fs::write(&huge, "func @f(%x: tensor<100000000000xf32>) -> tensor<100000000000xf32> {\n  %y = array.exp %x\n  return %y : tensor<100000000000xf32>\n}\n").expect("saved");
    fails_with(
        &[huge.to_str().expect("utf-8")],
        "more than the 268435456 elements a tensor may have here",
    );
}

#[test]
fn usage_errors_exit_2() {
    assert_eq!(run(&[SEED, "-O", "7"]).status.code(), Some(2));
    assert_eq!(run(&[]).status.code(), Some(2));
}

#[test]
fn each_constant_is_compiled_in_one_part() {
    // 20 kernels (more than a function keeps inline) reading a weight of 64 x 64 each, with
    // distinct values: the module splits into parts, and each weight must be compiled into
    // one of them only (every part was once given, and some compiled, a copy of all of them).
    let dir = scratch("parts");
    let mut source = String::from("func @chain(%x: tensor<8x64xf32>) -> tensor<8x64xf32> {\n");
    let mut previous = "%x".to_string();
    for layer in 0..20 {
        let values: Vec<String> = (0..64)
            .map(|row| {
                let row: Vec<String> = (0..64)
                    .map(|col| {
                        format!(
                            "{:.3}",
                            ((layer * 4096 + row * 64 + col) % 97) as f64 / 970.0
                        )
                    })
                    .collect();
                format!("[{}]", row.join(", "))
            })
            .collect();
        source += &format!(
            "  %w{layer} = array.constant dense<[{}]> : tensor<64x64xf32>\n  %m{layer} = array.matmul {previous}, %w{layer} : tensor<8x64xf32>\n  %t{layer} = array.tanh %m{layer} : tensor<8x64xf32>\n",
            values.join(", ")
        );
        previous = format!("%t{layer}");
    }
    source += &format!("  return {previous} : tensor<8x64xf32>\n}}\n");
    let model = dir.join("chain.tsr");
    std::fs::write(&model, source).expect("saved");
    let out = run(&[
        model.to_str().expect("utf-8"),
        "--stats",
        "--compare-reference",
    ]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    assert!(stdout.contains("PASS"), "{stdout}");
    let parts = stdout
        .lines()
        .find_map(|line| line.strip_prefix("llvm parts: "))
        .unwrap_or_else(|| panic!("no llvm parts in:\n{stdout}"));
    let bytes: Vec<u64> = parts
        .split("; ")
        .map(|part| {
            let count = part
                .strip_suffix(" constant byte(s)")
                .and_then(|p| p.rsplit(' ').next())
                .unwrap_or_else(|| panic!("'{part}' names no constant bytes"));
            count.parse().expect("a count")
        })
        .collect();
    let weights = 20 * 64 * 64 * 4;
    let total: u64 = bytes.iter().sum();
    assert!(bytes.len() > 1, "the module split into parts: {parts}");
    assert!(
        (weights..weights + 4096).contains(&total),
        "the weights once, and a few small constants: {parts}"
    );
}
