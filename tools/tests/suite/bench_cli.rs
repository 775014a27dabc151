//! `tessera-bench` once, in a tiny configuration, to prove that it works (benchmarks are
//! never timed tests: nothing here checks a speed): the table, the JSON with every key the
//! comparison reads, the chart, user models, flop counts, and bad arguments.

use crate::common::root;
use std::process::{Command, Output};
use tessera::frontend::load;
use tessera::transforms::decompose::decompose;
use tessera_tools::registry;

fn bench(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tessera-bench"))
        .env("TESSERA_TUNING_CACHE", "")
        .args(args)
        .current_dir(root())
        .output()
        .expect("tessera-bench starts")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn the_built_in_suite_runs_in_every_mode() {
    let dir = std::env::temp_dir().join(format!("tessera-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch folder");
    let json = dir.join("out.json");
    let svg = dir.join("out.svg");
    let out = bench(&[
        "--workload",
        "w1_b1,w5",
        "--time",
        "0",
        "--threads",
        "1,2",
        "--json",
        json.to_str().unwrap(),
        "--chart",
        svg.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let table = text(&out.stdout);
    assert!(table.starts_with("machine: "), "{table}");
    for needle in [
        "w1_b1 — seed MLP",
        "w5 — attention",
        "-O0 ",
        "-O3 --no-fusion",
        "-O3 ",
        "-O3, 2 threads",
        "-O3 --no-fusion, 2 threads",
    ] {
        assert!(table.contains(needle), "{needle} missing from\n{table}");
    }
    let json = std::fs::read_to_string(&json).expect("the JSON file");
    for key in [
        "\"machine\"",
        "\"commit\"",
        "\"settings\"",
        "\"results\"",
        "\"fma_peak_gflops\"",
        "\"copy_gbps\"",
        "\"threads\": [1, 2]",
    ] {
        assert!(json.contains(key), "{key} missing from {json}");
    }
    let records: Vec<&str> = json
        .lines()
        .filter(|l| l.contains("\"workload\""))
        .collect();
    // -O0 (untiled: nothing to split) runs on one thread only.
    assert_eq!(
        records.len(),
        10,
        "2 workloads x 5 modes and thread counts:\n{json}"
    );
    for key in [
        "workload",
        "mode",
        "threads",
        "median_ms",
        "p10_ms",
        "p90_ms",
        "compile_ms",
        "first_call_ms",
        "peak_bytes",
        "kernels",
        "gflops",
        "gbps",
        "fraction_of_limit",
    ] {
        let quoted = format!("\"{key}\": ");
        assert!(
            records.iter().all(|r| r.contains(&quoted)),
            "{key} missing from a record"
        );
    }
    let expected = [
        ("-O0", 1),
        ("-O3 --no-fusion", 1),
        ("-O3 --no-fusion", 2),
        ("-O3", 1),
        ("-O3", 2),
    ];
    for (record, (mode, threads)) in records.iter().zip(expected) {
        assert!(
            record.contains(&format!("\"mode\": \"{mode}\", \"threads\": {threads},")),
            "{record}"
        );
    }
    // The seed MLP at batch 1: 2 x 784 x 10 + 2 x 10 x 10 multiply-adds, plus 8 elementwise
    // or reduction passes over 10 values, and the reciprocal of the softmax's sum.
    assert!(records[0].contains("\"flops\": 15961,"), "{}", records[0]);
    let svg = std::fs::read_to_string(&svg).expect("the chart");
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
    assert_eq!(svg.matches("<rect x=").count(), 10, "a bar per result");
}

#[test]
fn a_user_model_runs_in_the_modes_asked() {
    let out = bench(&[
        "testdata/models/layer_norm_gelu.tsr",
        "--entry",
        "layer_norm_gelu",
        "-O0",
        "--no-fusion",
        "--time",
        "0",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let table = text(&out.stdout);
    assert!(table.contains("-O0 "), "{table}");
    assert!(table.contains("-O3 --no-fusion"), "{table}");
    let rows = table
        .lines()
        .filter(|l| l.trim_start().starts_with("-O"))
        .count();
    assert_eq!(rows, 2, "one row per mode asked:\n{table}");
    assert!(
        !table.lines().any(|l| l.trim_start().starts_with("-O3  ")),
        "{table}"
    );
}

#[test]
fn bad_arguments_are_errors() {
    let cases: [(&[&str], &str); 5] = [
        (
            &["--workload", "w9"],
            "unknown workload 'w9' (workloads: w1_b1, w1_b64",
        ),
        (&["--entry", "f"], "--entry needs a MODEL"),
        (
            &["testdata/models/layer_norm_gelu.tsr"],
            "has 2 functions: choose one with --entry",
        ),
        (
            &["testdata/models/missing.tsr"],
            "cannot read 'testdata/models/missing.tsr'",
        ),
        (&["testdata/onnx/missing.onnx"], "cannot read"),
    ];
    for (args, message) in cases {
        let out = bench(args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let err = text(&out.stderr);
        assert!(err.contains(message), "{args:?}: {err}");
        assert_eq!(
            err.matches("tessera-bench: error").count(),
            1,
            "one prefix: {args:?}: {err}"
        );
    }
}

#[test]
fn flops_are_counted_on_the_decomposed_model() {
    let registry = registry();
    let count = |source: &str| {
        let file = tessera::source::SourceFile::new("t.tsr", source);
        let module = load(&file, 0..source.len(), &registry).expect("valid");
        decompose(&module).expect("decomposes").flops(0)
    };
    // 2 x 4 x 5 x 3 for the matmul, 4 x 5 for the bias, 4 x 5 for relu.
    assert_eq!(
        count(
            "func @f(%x: tensor<4x3xf32>, %w: tensor<3x5xf32>, %b: tensor<5xf32>) -> tensor<4x5xf32> {
  %h = nn.dense %x, %w, %b
  %y = nn.relu %h
  return %y : tensor<4x5xf32>
}"
        ),
        120 + 20 + 20
    );
    // A 3x3 convolution over 2 input channels into 4 (8x8 outputs, batch 1): 2 x 9 x 2 per
    // output, then the 2x2 max pool reads 4 values per output; layout changes are free.
    assert_eq!(
        count(
            "func @f(%x: tensor<1x8x8x2xf32>, %w: tensor<3x3x2x4xf32>) -> tensor<1x64xf32> {
  %c = nn.conv2d %x, %w {padding = \"same\"} : tensor<1x8x8x4xf32>
  %p = nn.max_pool2d %c {window = [2, 2]} : tensor<1x4x4x4xf32>
  %f = array.reshape %p : tensor<1x64xf32>
  return %f : tensor<1x64xf32>
}"
        ),
        256 * 36 + 64 * 4
    );
}

#[test]
fn a_model_with_errors_gets_its_diagnostics() {
    let dir = std::env::temp_dir().join(format!("tessera-bench-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch folder");
    let model = dir.join("bad.tsr");
    std::fs::write(
        &model,
        "func @f(%x: tensor<4xf32>) -> tensor<4xf32> {\n  %y = array.neg %z\n  return %y : tensor<4xf32>\n}\n",
    )
    .expect("model written");
    let out = bench(&[model.to_str().unwrap(), "--time", "0"]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(
        err.starts_with(&format!(
            "{}:2:18: error: use of undefined value '%z'",
            model.display()
        )),
        "{err}"
    );
    assert!(!err.contains("tessera-bench: error:"), "{err}");
}

#[test]
fn tune_tunes_each_workload_then_measures_with_the_cache() {
    let dir = std::env::temp_dir().join(format!("tessera-bench-tune-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch folder");
    let cache = dir.join("cache.json");
    let json = dir.join("out.json");
    let out = bench(&[
        "--workload",
        "w1_b1",
        "-O3",
        "--time",
        "0",
        "--tune",
        "--tune-budget",
        "30s",
        "--tuning-cache",
        cache.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ]);
    let stdout = text(&out.stdout);
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(stderr.contains("tuned w1_b1 on 1 thread(s): "), "{stderr}");
    assert!(
        stdout.contains(&format!("tuning cache: {}", cache.display())),
        "{stdout}"
    );
    let report = std::fs::read_to_string(&json).expect("the JSON report");
    assert!(
        report.contains(&format!("\"tuning_cache\": \"{}\"", cache.display())),
        "{report}"
    );
    // Without one named (and none in the environment), none.
    let plain = bench(&["--workload", "w1_b1", "-O3", "--time", "0"]);
    assert!(
        text(&plain.stdout).contains("tuning cache: none (the strategy's choices)"),
        "{}",
        text(&plain.stdout)
    );
}
