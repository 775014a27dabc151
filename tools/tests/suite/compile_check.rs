//! What "the compiler handles this program" means, checked through the tools as child
//! processes: every preset (and `--threads 2`) compiles the function, runs it on
//! deterministic inputs and agrees with the reference interpreter. Shared by the
//! whole-compiler fuzzer and the regression corpus (`testdata/regressions`).

use crate::child::{run_tool, Outcome};
use crate::common::root;
use std::path::PathBuf;
use std::time::Duration;

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
        eprintln!("{failure}\n");
        let log = dir.join("failures.txt");
        let _ = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .and_then(|mut file| {
                std::io::Write::write_all(&mut file, format!("{failure}\n\n").as_bytes())
            });
        failures.push(failure);
        // One failure per program is enough to go on; the others are usually the same.
        break;
    }
    failures
}
