//! The importer fuzzed by structure: the ONNX node tests (1884 small real models, one per op
//! form) mutated as a model author might get them wrong — an attribute changed, an input
//! left out, an input's shape changed, an op type swapped — then imported. Each mutant must
//! import or be refused with an error: never a panic, never a module that does not verify
//! (an importer bug); the accepted ones must compile at every preset and agree with the
//! reference interpreter. Each is imported with the sequence lengths and empty optionals its
//! case's test data has, so mutants of models that take sequences and optionals get past the
//! graph's boundary (tensor inputs keep their declared shapes, which mutations change).
//! `TESSERA_FUZZ_CASES` (accepted mutants) and `TESSERA_FUZZ_SEED` choose the run, as for
//! the other fuzzers.

use crate::common::root;
use crate::compile_check::check_everywhere;
use crate::compiler_fuzz::{env_number, Rng};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::process::Command;
use tessera_onnx::proto::{DimensionValue, ModelProto, Value};
use tessera_onnx::{import, read_model, ImportError, ImportOptions, InputShape};
use tessera_tools::conformance::{case_dirs, case_inputs, input_shapes};
use tessera_tools::registry;

/// Small integers an attribute may be set to: edges of every range.
const INTS: &[i64] = &[-3, -2, -1, 0, 1, 2, 3, 7, 1 << 40];

/// One random change to `model`; false when the pick had nothing to change.
fn mutate(model: &mut ModelProto, rng: &mut Rng) -> bool {
    let Some(graph) = model.graph.as_mut() else {
        return false;
    };
    match rng.below(5) {
        0 | 1 => {
            let Some(node) = rng.choose_mut(&mut graph.node) else {
                return false;
            };
            let Some(attr) = rng.choose_mut(&mut node.attribute) else {
                return false;
            };
            if !attr.ints.is_empty() {
                let at = rng.below(attr.ints.len());
                if rng.below(4) == 0 {
                    attr.ints.remove(at);
                } else {
                    attr.ints[at] = *rng.pick(INTS);
                }
            } else if !attr.floats.is_empty() {
                let at = rng.below(attr.floats.len());
                attr.floats[at] = *rng.pick(&[-1.0, 0.0, 1e30, f32::NAN]);
            } else if attr.r#type == 2 {
                attr.i = *rng.pick(INTS);
            } else if attr.r#type == 1 {
                attr.f = *rng.pick(&[-1.0, 0.0, 0.5, 1e30]);
            } else {
                return false;
            }
        }
        2 => {
            let Some(node) = rng.choose_mut(&mut graph.node) else {
                return false;
            };
            let Some(input) = rng.choose_mut(&mut node.input) else {
                return false;
            };
            input.clear();
        }
        3 => {
            let Some(info) = rng.choose_mut(&mut graph.input) else {
                return false;
            };
            let Some(Value::TensorType(tensor)) =
                info.r#type.as_mut().and_then(|t| t.value.as_mut())
            else {
                return false;
            };
            let Some(dim) = tensor
                .shape
                .as_mut()
                .and_then(|s| rng.choose_mut(&mut s.dim))
            else {
                return false;
            };
            dim.value = Some(DimensionValue::DimValue(*rng.pick(&[0, 1, 2, 5])));
        }
        _ => {
            let names = tessera_onnx::ops::op_types();
            let Some(node) = rng.choose_mut(&mut graph.node) else {
                return false;
            };
            node.op_type = rng.pick(&names).to_string();
        }
    }
    true
}

#[test]
fn mutated_node_tests_import_cleanly_and_compile_everywhere() {
    let python = root().join(".venv-onnx/bin/python");
    assert!(
        python.exists(),
        "run scripts/setup.sh: .venv-onnx is missing"
    );
    let dir = root().join("target/onnx-node-tests-fuzz");
    if !dir.join("test_abs").exists() {
        let status = Command::new(&python)
            .arg(root().join("scripts/onnx_node_tests.py"))
            .arg(&dir)
            .stderr(std::process::Stdio::null())
            .status()
            .expect("python runs");
        assert!(status.success(), "scripts/onnx_node_tests.py failed");
    }
    let models: Vec<(String, ModelProto, ImportOptions)> = case_dirs(&dir, None)
        .expect("cases written")
        .into_iter()
        .filter_map(|case| {
            let name = case.file_name()?.to_str()?.to_string();
            let model = read_model(&case.join("model.onnx")).ok()?;
            let mut shapes = input_shapes(&case_inputs(&case, &model).ok()?);
            shapes.retain(|_, shape| !matches!(shape, InputShape::Tensor(_)));
            let options = ImportOptions {
                input_shapes: shapes,
                side_file: "model.safetensors".into(),
                source_name: "mutant.onnx".into(),
                bound_inputs: Default::default(),
            };
            Some((name, model, options))
        })
        .collect();
    assert!(models.len() > 1000, "{} node tests", models.len());
    let cases = env_number("TESSERA_FUZZ_CASES", 40);
    let first = env_number("TESSERA_FUZZ_SEED", 1);
    let registry = registry();
    let (mut failures, mut accepted, mut tried) = (Vec::new(), 0, 0);
    let mut seed = first;
    while accepted < cases && seed < first + 50 * cases.max(1) {
        let mut rng = Rng::new(seed);
        seed += 1;
        let (name, model, options) = rng.pick(&models);
        let mut mutant = model.clone();
        let mut changed = false;
        for _ in 0..1 + rng.below(2) {
            changed |= mutate(&mut mutant, &mut rng);
        }
        if !changed {
            continue;
        }
        tried += 1;
        let label = format!("{name} (seed {})", seed - 1);
        let imported = catch_unwind(AssertUnwindSafe(|| import(&mutant, options, &registry)));
        match imported {
            Err(_) => failures.push(format!("{label}: the importer panicked")),
            Ok(Err(ImportError::Verify(why))) => failures.push(format!(
                "{label}: the imported module does not verify:\n{why}"
            )),
            Ok(Err(_)) => {}
            Ok(Ok(imported)) => {
                accepted += 1;
                // Side-file constants live in memory only; such mutants are checked by import.
                if imported.text.contains("external<") {
                    continue;
                }
                let entry = imported.module.funcs[0].name.clone();
                failures.extend(check_everywhere(
                    &imported.text,
                    &format!("onnx-mutant-{}", seed - 1),
                    &entry,
                ));
            }
        }
    }
    assert!(accepted > 0, "no mutant imported ({tried} tried)");
    assert!(
        failures.is_empty(),
        "{} of {tried} mutants failed (seeds from {first}):\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}
