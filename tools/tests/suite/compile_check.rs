//! What "the compiler handles this program" means, checked through the tools as child
//! processes: every preset (and `--threads 2`) compiles the function, runs it on
//! deterministic inputs and agrees with the reference interpreter; for the GPU, every CUDA
//! configuration compiles the module to PTX that `ptxas` assembles (or refuses it with the
//! one located error a valid model may meet: a kernel needing more shared memory than a
//! block has). Shared by the whole-compiler fuzzer and the regression corpus
//! (`testdata/regressions`).

use crate::child::{run_tool, Outcome};
use crate::common::root;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tessera::mlir::gpu::ptx::assemble;
use tessera::mlir::gpu::toolkit;

/// The configurations every accepted program must pass: the presets, the unfused build, and
/// the fused and unfused builds on two threads with every parallel loop split.
pub const CONFIGURATIONS: &[&[&str]] = &[
    &["-O0"],
    &["-O1"],
    &["-O2"],
    &["-O3"],
    &["-O3", "--no-fusion"],
    &["-O3", "--threads", "2"],
    &["-O3", "--no-fusion", "--threads", "2"],
];

/// The CUDA configurations every accepted program must compile in, to PTX for sm_90.
pub const GPU_CONFIGURATIONS: &[&[&str]] = &[&["-O0"], &["-O3"], &["-O3", "--no-fusion"]];

/// How long one compile-and-run may take (debug builds of tessera's own code are slow).
pub const LIMIT: Duration = Duration::from_secs(90);

/// A folder for the programs under test and the reproducers of failures.
pub fn scratch() -> PathBuf {
    let dir = root().join("target").join("compile-check");
    std::fs::create_dir_all(&dir).expect("target/ is writable");
    dir
}

/// Why a run does not count: the program is too large for the reference interpreter, or
/// the machine has not the memory its temporaries need. Neither is a compiler bug.
fn out_of_scope(outcome: &Outcome) -> bool {
    outcome.code == Some(4) || outcome.stderr.contains("elements a tensor may have here")
}

/// Compiles and runs function `entry` of the program `text` in every configuration; the
/// failures, each with the saved program and the tool's report. `name` names the saved file.
pub fn check_everywhere(text: &str, name: &str, entry: &str) -> Vec<String> {
    let dir = scratch();
    let path = dir.join(format!("{name}.tsr"));
    std::fs::write(&path, text).expect("the scratch folder is writable");
    let mut failures = Vec::new();
    for configuration in CONFIGURATIONS {
        let mut args = vec![
            path.display().to_string(),
            "--entry".to_string(),
            entry.to_string(),
            "--compare-reference".to_string(),
            // Release binaries (`TESSERA_FUZZ_BIN_DIR`) verify every pass too.
            "--verify-each".to_string(),
        ];
        args.extend(configuration.iter().map(|a| a.to_string()));
        let outcome = run_tool("tessera-run", &args, &dir, LIMIT);
        if outcome.code == Some(0) || out_of_scope(&outcome) {
            continue;
        }
        let failure = format!(
            "{} ({}) failed: program saved in {}\n{}",
            name,
            configuration.join(" "),
            path.display(),
            outcome.report()
        );
        // Long runs are watched through this file (and stderr) while they go on.
        log_failure(&dir, &failure);
        failures.push(failure);
        // One failure per program is enough to go on; the others are usually the same.
        break;
    }
    if failures.is_empty() {
        failures.extend(check_gpu(&path, name, &dir));
    }
    failures
}

/// Records `failure` where long runs are watched (stderr and `failures.txt` in `dir`).
fn log_failure(dir: &Path, failure: &str) {
    eprintln!("{failure}\n");
    let _ = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join("failures.txt"))
        .and_then(|mut file| {
            std::io::Write::write_all(&mut file, format!("{failure}\n\n").as_bytes())
        });
}

/// Compiles the program at `path` for the GPU in every [`GPU_CONFIGURATIONS`] and assembles
/// its PTX with `ptxas` (when this machine has it); the first failure.
fn check_gpu(path: &Path, name: &str, dir: &Path) -> Option<String> {
    for configuration in GPU_CONFIGURATIONS {
        let mut args = vec![
            path.display().to_string(),
            "--target=cuda".to_string(),
            "--emit=ptx".to_string(),
            "--verify-each".to_string(),
        ];
        args.extend(configuration.iter().map(|a| a.to_string()));
        let outcome = run_tool("tessera-opt", &args, dir, LIMIT);
        let limitation = outcome.code == Some(1)
            && outcome
                .stderr
                .contains("bytes of shared memory per block, more than the");
        let failure = match outcome.code {
            Some(0) => match toolkit::ptxas().map(|_| assemble(&outcome.stdout, "sm_90")) {
                Some(Err(message)) => Some(format!("ptxas rejects its PTX:\n{message}")),
                _ => None,
            },
            _ if limitation => None,
            _ => Some(outcome.report()),
        };
        if let Some(failure) = failure {
            let failure = format!(
                "{name} (--target=cuda {}) failed: program saved in {}\n{failure}",
                configuration.join(" "),
                path.display()
            );
            log_failure(dir, &failure);
            return Some(failure);
        }
    }
    None
}
