//! The tuner and its cache end to end: `tessera-tune` on a tiny model with a small budget
//! writes a cache every compile then uses; entries written by hand take effect where their
//! kernels are (tiles, fusion) and show in `--print-ir-after=tessera-tile` and the fusion
//! report; a corrupt cache and a stale entry are reported and ignored, never a failure or a
//! wrong answer.

use crate::common::root;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use tessera::mlir::cpu::cpu_model::CpuModel;
use tessera::mlir::cpu::tuning::{Entry, FusionChoice, TileChoice, TuningCache, TuningTarget};

/// A matmul and its ReLU epilogue: one fused kernel by the strategy.
const MODEL: &str =
    "func @main(%a: tensor<64x128xf32>, %b: tensor<128x96xf32>) -> tensor<64x96xf32> {
  %m = array.matmul %a, %b
  %r = nn.relu %m
  return %r : tensor<64x96xf32>
}
";

const MATMUL: &str = "linalg.matmul [64, 96, 128r] f32 f32 f32";
const FUSION: &str = "fuse linalg.matmul [64, 96, 128r] f32 f32 f32 into linalg.generic [64, 96] f32 f32 maps (d0, d1) -> (d0, d1); (d0, d1) -> (d0, d1) body arith.maximumf";

/// A scratch folder holding the model.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tessera-tuning-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch folder");
    std::fs::write(dir.join("model.tsr"), MODEL).expect("model written");
    dir
}

fn tool(name: &str, args: &[&str]) -> Output {
    let binary = match name {
        "tessera-tune" => env!("CARGO_BIN_EXE_tessera-tune"),
        "tessera-run" => env!("CARGO_BIN_EXE_tessera-run"),
        _ => env!("CARGO_BIN_EXE_tessera-opt"),
    };
    Command::new(binary)
        .env("TESSERA_TUNING_CACHE", "")
        .args(args)
        .current_dir(root())
        .output()
        .expect("the tool starts")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The host's target as the stages key it, on one thread.
fn host_target() -> String {
    let host = CpuModel::host();
    TuningTarget {
        cpu: host.cpu.clone(),
        unit: if host.lanes >= 16 { "avx512" } else { "avx2" },
        l2_bytes: host.l2_bytes,
        threads: 1,
    }
    .to_string()
}

/// Runs the model with `cache` against the reference; returns stderr.
fn runs_correctly(model: &Path, cache: &Path) -> String {
    let out = tool(
        "tessera-run",
        &[
            model.to_str().unwrap(),
            "--compare-reference",
            "--tuning-cache",
            cache.to_str().unwrap(),
        ],
    );
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    assert!(
        stdout.contains("PASS") && !stdout.contains("FAIL"),
        "{stdout}"
    );
    text(&out.stderr)
}

/// The IR after tessera-tile with `cache`.
fn tiled(model: &Path, cache: &Path) -> String {
    let out = tool(
        "tessera-opt",
        &[
            model.to_str().unwrap(),
            "-O3",
            "--tuning-cache",
            cache.to_str().unwrap(),
            "--print-ir-after=tessera-tile",
            "-o",
            "/dev/null",
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    text(&out.stderr)
}

/// `tessera-tune` on `model` into `cache` with a budget of `budget`.
fn tune(model: &Path, cache: &Path, budget: &str) -> Output {
    tool(
        "tessera-tune",
        &[
            model.to_str().unwrap(),
            "--budget",
            budget,
            "--tuning-cache",
            cache.to_str().unwrap(),
        ],
    )
}

#[test]
fn the_tuner_writes_a_cache_every_compile_uses() {
    let dir = scratch("tune");
    let model = dir.join("model.tsr");
    let cache = dir.join("cache.json");
    let out = tune(&model, &cache, "60s");
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    assert!(
        stdout.contains("strategy ") && stdout.contains(" trials ("),
        "{stdout}"
    );
    assert!(stdout.contains("written to"), "{stdout}");
    let loaded = TuningCache::load(&cache);
    assert!(loaded.problems.is_empty(), "{:?}", loaded.problems);
    let entries: Vec<&Entry> = loaded.cache.entries().collect();
    assert!(!entries.is_empty());
    for entry in &entries {
        assert_eq!(entry.target, host_target());
        let measured = entry.measured.as_ref().expect("what tuning measured");
        assert!(measured.tuned_ms > 0.0 && measured.strategy_ms > 0.0);
        assert!(
            measured.model.ends_with("model.tsr @main"),
            "{}",
            measured.model
        );
    }
    // The fusion was searched first, and every compile now takes the cache's choices.
    assert!(entries.iter().any(|e| e.kernel == FUSION), "{entries:?}");
    assert!(tiled(&model, &cache).contains("source = \"tuning cache\""));
    runs_correctly(&model, &cache);
}

#[test]
fn hand_written_entries_choose_tiles_and_fusion() {
    let dir = scratch("entries");
    let model = dir.join("model.tsr");
    let cache_path = dir.join("cache.json");
    let mut cache = TuningCache::default();
    cache.insert(Entry {
        target: host_target(),
        kernel: FUSION.into(),
        tiles: None,
        fusion: Some(FusionChoice {
            fuse: false,
            tiles: vec![],
        }),
        measured: None,
    });
    cache.insert(Entry {
        target: host_target(),
        kernel: MATMUL.into(),
        tiles: Some(TileChoice {
            cache: vec![32, 48, 64],
            register: vec![4, 16, 1],
            order: vec![2, 0, 1],
            panels: false,
        }),
        fusion: None,
        measured: None,
    });
    cache.save(&cache_path).expect("cache written");
    let ir = tiled(&model, &cache_path);
    assert!(
        ir.contains(&format!("cache = array<i64: 32, 48, 64>, kernel = \"{MATMUL}\", order = array<i64: 2, 0, 1>, panels = false, register = array<i64: 4, 16, 1>, source = \"tuning cache\"")),
        "{ir}"
    );
    let report = tool(
        "tessera-opt",
        &[
            model.to_str().unwrap(),
            "-O3",
            "--fusion-report",
            "--tuning-cache",
            cache_path.to_str().unwrap(),
        ],
    );
    let report = text(&report.stdout);
    assert!(report.contains("@main: 2 kernel(s)"), "{report}");
    assert!(
        report.contains("%m (line 2, array.matmul): the tuning cache keeps this contraction and its epilogue apart"),
        "{report}"
    );
    runs_correctly(&model, &cache_path);
}

#[test]
fn a_corrupt_cache_or_a_stale_entry_is_reported_and_ignored() {
    let dir = scratch("corrupt");
    let model = dir.join("model.tsr");
    let corrupt = dir.join("corrupt.json");
    std::fs::write(&corrupt, "{\"format\": tessera").unwrap();
    let stderr = runs_correctly(&model, &corrupt);
    assert!(
        stderr.contains(&format!("warning: tuning cache {}:1:", corrupt.display())),
        "{stderr}"
    );
    assert!(stderr.contains("the file is ignored"), "{stderr}");
    // Ignored: no op is marked as a cache's stages mark them.
    let ir = tiled(&model, &corrupt);
    assert!(
        ir.contains("IR Dump After tessera-tile") && !ir.contains("tessera.tuning"),
        "{ir}"
    );

    let stale = dir.join("stale.json");
    let mut cache = TuningCache::default();
    cache.insert(Entry {
        target: host_target(),
        kernel: FUSION.into(),
        tiles: None,
        fusion: Some(FusionChoice {
            fuse: true,
            tiles: vec![0, 40],
        }),
        measured: None,
    });
    std::fs::write(&stale, cache.to_text()).unwrap();
    let stderr = runs_correctly(&model, &stale);
    assert!(
        stderr.contains("entry 1 (kernel 'fuse linalg.matmul")
            && stderr.contains("tiles size 40 does not divide loop 1 of 96; the entry is ignored"),
        "{stderr}"
    );
}

#[test]
fn the_tuner_refuses_bad_requests_clearly() {
    let dir = scratch("bad");
    let model = dir.join("model.tsr");
    let cache = dir.join("c.json");
    let out = tune(&model, &cache, "soon");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("--budget 'soon' is not a time"),
        "{}",
        text(&out.stderr)
    );
    let out = tune(&dir.join("missing.tsr"), &cache, "5s");
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("missing.tsr"),
        "{}",
        text(&out.stderr)
    );
    assert!(!dir.join("c.json").exists());
    // A file that is no tuning cache is not written over.
    std::fs::write(&cache, "not json").unwrap();
    let out = tune(&model, &cache, "5s");
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("is not a tuning cache this tessera can update"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(std::fs::read_to_string(&cache).unwrap(), "not json");
}
