//! The CUDA target up to PTX, which needs no GPU: every model at every preset (and unfused)
//! compiles with `--target=cuda --emit=ptx` for sm_80 and sm_90, and NVIDIA's `ptxas`
//! assembles the PTX for that chip, as the driver would load it. `scripts/setup.sh` installs
//! ptxas; without it the test fails and says so.

use crate::common::{relative, root, tsr_files};
use std::process::Command;
use tessera::mlir::gpu::ptx::assemble;
use tessera::mlir::gpu::toolkit;

/// The chips the suite assembles for: the A100's and the H100's (and H200's).
const CHIPS: [&str; 2] = ["sm_80", "sm_90"];

/// The configurations: every preset, and the fullest one unfused.
const PRESETS: [&[&str]; 5] = [
    &["-O0"],
    &["-O1"],
    &["-O2"],
    &["-O3"],
    &["-O3", "--no-fusion"],
];

#[test]
fn every_model_assembles_for_sm80_and_sm90_at_every_preset() {
    assert!(toolkit::ptxas().is_some(), "{}", toolkit::missing("ptxas"));
    let mut failures = Vec::new();
    for path in tsr_files("testdata/models") {
        let name = relative(&path);
        for preset in PRESETS {
            for chip in CHIPS {
                let out = Command::new(env!("CARGO_BIN_EXE_tessera-opt"))
                    .arg(&name)
                    .args(preset)
                    .args(["--target=cuda", "--emit=ptx"])
                    .arg(format!("--gpu-chip={chip}"))
                    .current_dir(root())
                    .output()
                    .expect("tessera-opt starts");
                let what = format!("{name} {} {chip}", preset.join(" "));
                if !out.status.success() {
                    failures.push(format!("{what}: {}", String::from_utf8_lossy(&out.stderr)));
                    continue;
                }
                let ptx = String::from_utf8_lossy(&out.stdout);
                if !ptx.contains(&format!(".target {chip}")) || !ptx.contains(".entry") {
                    failures.push(format!("{what}: no kernels for {chip} in\n{ptx}"));
                    continue;
                }
                if let Err(message) = assemble(&ptx, chip) {
                    failures.push(format!("{what}: ptxas: {message}"));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn every_gpu_bench_workload_compiles_and_assembles_for_sm90() {
    use tessera::frontend::load;
    use tessera::mlir::gpu::compile::compile;
    use tessera::mlir::pipeline::{Pipeline, Target};
    use tessera::mlir::MlirContext;
    use tessera::source::SourceFile;
    use tessera_tools::bench::workloads::{builtin, BUILTIN_IDS, EXTRA_IDS};
    assert!(toolkit::ptxas().is_some(), "{}", toolkit::missing("ptxas"));
    let registry = tessera_tools::registry();
    let mut failures = Vec::new();
    // What scripts/gpu-check.sh benchmarks, in the modes it runs.
    for id in BUILTIN_IDS.iter().chain(&EXTRA_IDS) {
        let workload = builtin(id).expect("a built-in workload");
        let file = SourceFile::new(workload.path.clone(), workload.source.clone());
        let module = load(&file, 0..file.text().len(), &registry).expect("valid workload");
        for fusion in [true, false] {
            let pipeline = Pipeline::preset_for(Target::Cuda, 3, fusion, None);
            let what = format!("{id} -O3{}", if fusion { "" } else { " --no-fusion" });
            match compile(&MlirContext::new(), &module, &file, &pipeline) {
                Ok((plan, _)) => {
                    if let Err(message) = assemble(&plan.ptx, "sm_90") {
                        failures.push(format!("{what}: ptxas: {message}"));
                    }
                }
                Err(d) => failures.push(format!("{what}: {d:?}")),
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
