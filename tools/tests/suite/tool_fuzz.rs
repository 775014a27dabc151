//! Fuzzing the tools' other inputs, through child processes: random pipelines (tessera's
//! stages and upstream passes in any order, bad options), mutated schedules, mutated MLIR
//! input and mutated `.npy` headers. None may end in silent death (a signal, an abort), a
//! hang or a panic, and none may crash a tessera stage. A crash inside an upstream pass or
//! transform the input itself names is MLIR's bug: it must be reported (exit status 3, the
//! step named), which is all tessera can do. `TESSERA_FUZZ_CASES` and `TESSERA_FUZZ_SEED`
//! apply as in `compiler_fuzz`.

use crate::child::{run_tool, Outcome};
use crate::common::{root, tsr_files};
use crate::compile_check::scratch;
use crate::compiler_fuzz::{env_number, Rng};
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(90);

/// Why an outcome is not acceptable, if it is not.
fn problem(outcome: &Outcome) -> Option<String> {
    if outcome.timed_out {
        return Some("it hung".into());
    }
    match outcome.code {
        Some(0..=2) | Some(4) => None,
        Some(3) => {
            let step = outcome
                .stderr
                .split("while running '")
                .nth(1)
                .and_then(|rest| rest.split('\'').next())
                .unwrap_or("");
            step.starts_with("tessera-")
                .then(|| format!("tessera's stage '{step}' crashed"))
                .or_else(|| step.is_empty().then(|| "a crash outside any step".into()))
        }
        Some(code) => Some(format!("exit status {code} (not one of 0-4)")),
        None => Some("killed by a signal: a silent death".into()),
    }
}

/// Runs `tool` on `args`; a failure report when the outcome is not acceptable.
fn check(tool: &str, args: Vec<String>, input: &str) -> Option<String> {
    let outcome = run_tool(tool, &args, &scratch(), LIMIT);
    problem(&outcome).map(|why| format!("{why}; input saved in {input}\n{}", outcome.report()))
}

/// Runs `case` for every seed of this run (`TESSERA_FUZZ_CASES` of them from
/// `TESSERA_FUZZ_SEED`), each with its own generator; fails with every report it returns.
fn fuzz_cases(mut case: impl FnMut(u64, &mut Rng) -> Option<String>) {
    let cases = env_number("TESSERA_FUZZ_CASES", 10);
    let first = env_number("TESSERA_FUZZ_SEED", 1);
    let failures: Vec<String> = (first..first + cases)
        .filter_map(|seed| case(seed, &mut Rng::new(seed)))
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// Pipeline elements, good and bad.
const ELEMENTS: &[&str] = &[
    "tessera-decompose",
    "tessera-convert-to-linalg",
    "tessera-fuse",
    "tessera-tile",
    "tessera-tile{sizes=4,4,4}",
    "tessera-tile{sizes=0,-1}",
    "tessera-tile{unit=avx512}",
    "tessera-vectorize",
    "tessera-bufferize",
    "tessera-parallelize{threads=2 min-work=1}",
    "tessera-lower-to-llvm",
    "tessera-lower-to-llvm{math=libm}",
    "tessera-lower-to-llvm{cpu=znver4}",
    "tessera-map-to-gpu",
    "tessera-lower-to-nvvm",
    "tessera-lower-to-nvvm{chip=sm_80}",
    "tessera-form-gpu-kernels",
    "tessera-promote-block-buffers",
    "gpu-kernel-outlining",
    "tessera-merge-gpu-modules",
    "tessera-apply-schedule{file=testdata/schedules/tile_matmul_8.mlir}",
    "canonicalize",
    "cse",
    "linalg-fuse-elementwise-ops",
    "convert-linalg-to-loops",
    "func.func(cse)",
    "loop-invariant-code-motion",
    "tessera-fsue",
    "tessera-fuse{x=1}",
];

fn models() -> Vec<String> {
    tsr_files("testdata/models")
        .into_iter()
        .map(|p| p.display().to_string())
        .collect()
}

#[test]
fn random_pipelines_never_crash_a_stage_or_die_silently() {
    let models = models();
    fuzz_cases(|_, rng| {
        let steps: Vec<&str> = (0..1 + rng.below(6)).map(|_| *rng.pick(ELEMENTS)).collect();
        let testdata = root().join("testdata").display().to_string();
        let pipeline =
            format!("builtin.module({})", steps.join(",")).replace("testdata", &testdata);
        let model = rng.pick(&models).clone();
        let args = vec![model.clone(), format!("--pass-pipeline={pipeline}")];
        check("tessera-opt", args, &format!("{model} with {pipeline}"))
    });
}

/// One textual change of MLIR or transform text: a line deleted or duplicated, a number
/// changed, or a word swapped for another of the same kind.
fn mutate_text(text: &str, rng: &mut Rng) -> String {
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    if lines.is_empty() {
        return text.to_string();
    }
    let at = rng.below(lines.len());
    match rng.below(4) {
        0 => {
            lines.remove(at);
        }
        1 => {
            let line = lines[at].clone();
            lines.insert(at, line);
        }
        2 => {
            let numbers = [0, 1, 2, 3, 7, 8, 16, 100, -1];
            let line = &lines[at];
            let digits: Vec<usize> = line
                .char_indices()
                .filter(|(_, c)| c.is_ascii_digit())
                .map(|(i, _)| i)
                .collect();
            if let Some(&i) = digits.get(rng.below(digits.len().max(1))) {
                let end = line[i..]
                    .find(|c: char| !c.is_ascii_digit())
                    .map_or(line.len(), |n| i + n);
                lines[at] = format!("{}{}{}", &line[..i], rng.pick(&numbers), &line[end..]);
            }
        }
        _ => {
            let families: &[&[&str]] = &[
                &["f32", "f16", "bf16", "f64", "i32"],
                &[
                    "tile_using_for",
                    "tile_using_forall",
                    "split_reduction",
                    "vectorize",
                ],
                &[
                    "linalg.matmul",
                    "linalg.batch_matmul",
                    "linalg.generic",
                    "linalg.fill",
                ],
                &["parallel", "reduction"],
                &["arith.addf", "arith.mulf", "arith.maximumf", "math.exp"],
            ];
            let family: &&[&str] = rng.pick(families);
            if let Some(word) = family.iter().find(|w| lines[at].contains(**w)) {
                let other = *rng.pick(family);
                lines[at] = lines[at].replacen(word, other, 1);
            }
        }
    }
    lines.join("\n") + "\n"
}

#[test]
fn mutated_schedules_never_crash_a_stage_or_die_silently() {
    let schedule = std::fs::read_to_string(root().join("testdata/schedules/tile_matmul_8.mlir"))
        .expect("the schedule is readable");
    fuzz_cases(|seed, rng| {
        let mut text = schedule.clone();
        for _ in 0..1 + rng.below(3) {
            text = mutate_text(&text, rng);
        }
        let path = scratch().join(format!("schedule-{seed}.mlir"));
        std::fs::write(&path, &text).expect("the scratch folder is writable");
        let model = root().join("testdata/models/mlp.tsr").display().to_string();
        let args = vec![
            model,
            "-O3".into(),
            "--schedule".into(),
            path.display().to_string(),
        ];
        check("tessera-opt", args, &path.display().to_string())
    });
}

#[test]
fn mutated_mlir_input_never_crashes_a_stage_or_dies_silently() {
    let models = models();
    fuzz_cases(|seed, rng| {
        let model = rng.pick(&models).clone();
        let converted = run_tool(
            "tessera-opt",
            &[model.clone(), "--emit=mlir".into()],
            &scratch(),
            LIMIT,
        );
        assert_eq!(converted.code, Some(0), "{}", converted.report());
        let mut text = converted.stdout;
        for _ in 0..1 + rng.below(2) {
            text = mutate_text(&text, rng);
        }
        let path = scratch().join(format!("input-{seed}.mlir"));
        std::fs::write(&path, &text).expect("the scratch folder is writable");
        let preset = if rng.below(2) == 0 { "-O0" } else { "-O3" };
        let args = vec![path.display().to_string(), preset.into()];
        check("tessera-opt", args, &path.display().to_string())
    });
}

#[test]
fn mutated_npy_headers_are_rejected_or_read_never_crash() {
    let dir = scratch().join("npy");
    let written = run_tool(
        "tessera-run",
        &[
            root()
                .join("testdata/models/seed_mlp.tsr")
                .display()
                .to_string(),
            "--output-dir".into(),
            dir.display().to_string(),
        ],
        &scratch(),
        LIMIT,
    );
    assert_eq!(written.code, Some(0), "{}", written.report());
    let original = std::fs::read(dir.join("out0.npy")).expect("an output was written");
    fuzz_cases(|seed, rng| {
        let mut bytes = original.clone();
        for _ in 0..1 + rng.below(4) {
            // Header bytes (the first 128) mostly, sometimes the data or the length.
            let span = if rng.below(4) == 0 { bytes.len() } else { 128 };
            let at = rng.below(bytes.len().min(span));
            match rng.below(3) {
                0 => bytes[at] = rng.next() as u8,
                1 => bytes.truncate(at),
                _ => bytes.insert(at, *rng.pick(b"(),:' 0123456789LTrueFalse<>fi")),
            }
            if bytes.is_empty() {
                break;
            }
        }
        let path = dir.join(format!("fuzzed-{seed}.npy"));
        std::fs::write(&path, &bytes).expect("the scratch folder is writable");
        // Given as the seed MLP's x ([64, 784]): each is rejected, as malformed or as a
        // [64, 10] array of the wrong type, with a message.
        let args = vec![
            root()
                .join("testdata/models/seed_mlp.tsr")
                .display()
                .to_string(),
            "--input".into(),
            format!("x={}", path.display()),
        ];
        check("tessera-run", args, &path.display().to_string())
    });
}
