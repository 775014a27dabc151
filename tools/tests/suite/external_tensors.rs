//! `external<"file", "key">` literals: tensors read from a safetensors side file beside the
//! `.tsr`, printed back as written, evaluated and compiled at every preset like inline ones,
//! and every way a side file can be wrong reported at the literal.

use crate::common::compiled_code_lock;
use crate::numerics::preset_failures;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tessera::diag::render_all;
use tessera::exec::bytes::encode;
use tessera::exec::interpret::interpret;
use tessera::exec::random::random_tensor;
use tessera::exec::tensor::Tensor;
use tessera::frontend::load;
use tessera::ir::Module;
use tessera::mlir::MlirContext;
use tessera::source::SourceFile;
use tessera::syntax::printer::print_module;
use tessera::types::{ElementType, TensorType};
use tessera::weights::{write_safetensors, StoredTensor};
use tessera_tools::registry;

/// A fresh folder for one test.
fn folder(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tessera-external-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp folder");
    dir
}

/// `tensor` as a stored tensor.
fn stored(tensor: &Tensor) -> StoredTensor {
    StoredTensor {
        ty: tensor.ty.clone(),
        bytes: Arc::from(encode(tensor)),
    }
}

/// Writes `text` as `model.tsr` in `dir` and loads it: the file, and the module or the
/// rendered diagnostics.
fn load_in(dir: &Path, text: &str) -> (SourceFile, Result<Module, String>) {
    let path = dir.join("model.tsr");
    std::fs::write(&path, text).expect("write model");
    let file = SourceFile::new(path.display().to_string(), text);
    let module = load(&file, 0..text.len(), &registry()).map_err(|d| render_all(&d, &file));
    (file, module)
}

const DENSE_MODEL: &str = "\
func @f(%x: tensor<4x8xf32>) -> tensor<4x3xf32> {
  %w = array.constant external<\"w.safetensors\", \"layer.w\"> : tensor<8x3xf32>
  %b = array.constant external<\"w.safetensors\", \"layer.b\"> : tensor<3xf32>
  %k = array.constant external<\"w.safetensors\", \"keep\"> : tensor<3xi1>
  %y = nn.dense %x, %w, %b : tensor<4x3xf32>
  %z = array.constant dense<0.0> : tensor<3xf32>
  %r = array.select %k, %y, %z : tensor<4x3xf32>
  return %r : tensor<4x3xf32>
}
";

/// Writes the side file of [`DENSE_MODEL`] into `dir`: the weights, the bias and the mask.
fn write_dense_weights(dir: &Path) -> (Tensor, Tensor) {
    let w = random_tensor(&TensorType::new(vec![8, 3], ElementType::F32), 7);
    let b = random_tensor(&TensorType::new(vec![3], ElementType::F32), 8);
    let keep = Tensor::from_f64(&TensorType::new(vec![3], ElementType::I1), [1.0, 0.0, 1.0]);
    let tensors = [
        ("layer.w", stored(&w)),
        ("layer.b", stored(&b)),
        ("keep", stored(&keep)),
    ];
    write_safetensors(
        &dir.join("w.safetensors"),
        tensors.iter().map(|(k, t)| (*k, t)),
    )
    .expect("write side file");
    (w, b)
}

#[test]
fn side_file_tensors_print_evaluate_and_compile_like_inline_ones() {
    let dir = folder("dense");
    let (w, b) = write_dense_weights(&dir);
    let (file, module) = load_in(&dir, DENSE_MODEL);
    let module = module.unwrap_or_else(|e| panic!("{e}"));
    let printed = print_module(&module);
    assert!(
        printed
            .contains("array.constant external<\"w.safetensors\", \"layer.w\"> : tensor<8x3xf32>"),
        "{printed}"
    );
    let (_, reparsed) = load_in(&dir, &printed);
    assert_eq!(reparsed.unwrap_or_else(|e| panic!("{e}")), module);

    // The interpreter sees the file's values: y = x·w + b, masked column 1.
    let x = random_tensor(&TensorType::new(vec![4, 8], ElementType::F32), 9);
    let got = interpret(&module, 0, std::slice::from_ref(&x)).expect("runs");
    for i in 0..4 {
        for n in 0..3 {
            let sum: f64 = (0..8)
                .map(|k| x.get_f64(i * 8 + k) * w.get_f64(k * 3 + n))
                .sum();
            let want = if n == 1 { 0.0 } else { sum + b.get_f64(n) };
            let have = got[0].get_f64(i * 3 + n);
            assert!(
                (have - want).abs() < 1e-5,
                "y[{i}, {n}] = {have}, want {want}"
            );
        }
    }
    let _exclusive = compiled_code_lock();
    let (failures, _) = preset_failures(&MlirContext::new(), "external", &file, &module);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    std::fs::remove_dir_all(&dir).expect("clean up");
}

#[test]
fn every_bad_side_file_is_reported_at_the_literal() {
    let dir = folder("errors");
    write_dense_weights(&dir);
    std::fs::write(
        dir.join("corrupt.safetensors"),
        b"\x10\0\0\0\0\0\0\0{\"a\": 1}",
    )
    .unwrap();
    std::fs::write(dir.join("notes.txt"), b"hello").unwrap();
    let outside = dir
        .parent()
        .unwrap()
        .join(format!("outside-{}.safetensors", std::process::id()));
    std::fs::copy(dir.join("w.safetensors"), &outside).unwrap();
    let outside_name = format!("../{}", outside.file_name().unwrap().to_str().unwrap());
    let cases: [(&str, &str, &str); 7] = [
        (
            "w.safetensors",
            "nope",
            "'w.safetensors' has no tensor 'nope'",
        ),
        (
            "missing.safetensors",
            "a",
            "side file 'missing.safetensors' cannot be opened",
        ),
        (
            "corrupt.safetensors",
            "a",
            "is not a valid safetensors file",
        ),
        ("notes.txt", "a", "must be a safetensors file"),
        (&outside_name, "layer.w", "lies outside the folder"),
        (
            "w.safetensors",
            "layer.b",
            "is tensor<3xf32>, but the result type is tensor<8x3xf32>",
        ),
        (
            "w.safetensors",
            "keep",
            "is tensor<3xi1>, but the result type is tensor<8x3xf32>",
        ),
    ];
    for (side, key, message) in cases {
        let text = format!(
            "func @f() -> tensor<8x3xf32> {{\n  %w = array.constant external<\"{side}\", \"{key}\"> : tensor<8x3xf32>\n  return %w : tensor<8x3xf32>\n}}\n"
        );
        let (_, module) = load_in(&dir, &text);
        let error = module.expect_err(&text);
        assert!(error.contains(message), "{side} {key}: {error}");
        assert!(error.contains("model.tsr:2:"), "not located: {error}");
    }
    std::fs::remove_file(&outside).unwrap();
    std::fs::remove_dir_all(&dir).expect("clean up");
}
