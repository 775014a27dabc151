//! insta snapshots of every model at -O0 and -O3, stage by stage (the IR after each stage of
//! the preset), so that any change in what a stage emits is reviewed.
//!
//! The LLVM-dialect stage is snapshotted for the models in [`LLVM_STAGE_MODELS`] only: it is
//! two thirds of all the text (9 of 14 MB over every model), a mechanical translation of the
//! bufferized IR by upstream conversions, and already checked by the numerics suite, which
//! runs it for every model at every preset.

use crate::common::{relative, root, tsr_files};
use std::process::Command;

/// The presets snapshotted.
const PRESETS: [&str; 2] = ["-O0", "-O3"];

/// The last stage of every preset, snapshotted only for [`LLVM_STAGE_MODELS`].
const LLVM_STAGE: &str = "tessera-lower-to-llvm";

/// The models whose LLVM-dialect stage is snapshotted too: a matmul model and an elementwise
/// one.
const LLVM_STAGE_MODELS: [&str; 2] = ["seed_mlp.tsr", "elementwise_chain.tsr"];

/// The header `--print-ir-after-all` writes before each stage's IR.
const DUMP_HEADER: &str = "// -----// IR Dump After ";

/// Splits `--print-ir-after-all` output into (stage name, IR after it).
fn stage_dumps(text: &str) -> Vec<(String, String)> {
    text.split(DUMP_HEADER)
        .skip(1)
        .map(|chunk| {
            let (header, ir) = chunk.split_once('\n').unwrap_or((chunk, ""));
            let stage = header.split_whitespace().next().unwrap_or(header);
            // MLIR ends some printed ops with a space; snapshots hold lines without it.
            let ir = ir.lines().map(str::trim_end).collect::<Vec<_>>().join("\n");
            (stage.to_string(), ir.trim_end().to_string())
        })
        .collect()
}

#[test]
fn every_model_stage_by_stage() {
    for path in tsr_files("testdata/models") {
        let name = relative(&path);
        let file = name.rsplit('/').next().unwrap_or(&name).to_string();
        for preset in PRESETS {
            let out = Command::new(env!("CARGO_BIN_EXE_tessera-opt"))
                .env("TESSERA_TUNING_CACHE", "")
                .args([
                    name.as_str(),
                    preset,
                    // Register tiles follow the vector unit: snapshots are AVX2's anywhere.
                    "--target-features=+avx2,+fma",
                    "--print-ir-after-all",
                    "-o",
                    "/dev/null",
                ])
                .current_dir(root())
                .output()
                .expect("tessera-opt starts");
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success(), "{name} {preset}: {stderr}");
            let dumps = stage_dumps(&stderr);
            assert!(
                dumps.iter().any(|(stage, _)| stage == LLVM_STAGE),
                "{name} {preset}: no stage dumps in\n{stderr}"
            );
            for (index, (stage, ir)) in dumps.iter().enumerate() {
                if stage == LLVM_STAGE && !LLVM_STAGE_MODELS.contains(&file.as_str()) {
                    continue;
                }
                let snapshot = format!("{}_{index}_{stage}", preset.trim_start_matches('-'));
                insta::with_settings!({ snapshot_suffix => file.clone(), input_file => name.clone() }, {
                    insta::assert_snapshot!(snapshot, ir);
                });
            }
        }
    }
}
