//! ONNX models through the tools: `tessera-import` writes `.tsr` and its side file,
//! `tessera-run` and `tessera-opt` read `.onnx` directly, the results agree with ONNX
//! Runtime's (recorded by `testdata/onnx/make.py`), and bad models are clear errors.

use crate::common::root;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use tessera::exec::compare::{compare, Tolerance};
use tessera::exec::npy::read_npy;

fn tool(bin: &str, args: &[&str]) -> Output {
    Command::new(bin)
        .env("TESSERA_TUNING_CACHE", "")
        .args(args)
        .current_dir(root())
        .output()
        .expect("the tool starts")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A scratch folder for this test.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tessera-import-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch folder");
    dir
}

const RUN: &str = env!("CARGO_BIN_EXE_tessera-run");
const IMPORT: &str = env!("CARGO_BIN_EXE_tessera-import");
const OPT: &str = env!("CARGO_BIN_EXE_tessera-opt");
const NET: &str = "testdata/onnx/conv_net.onnx";

/// Runs `model` on the recorded input at `preset` and returns `out0.npy`'s bytes.
fn run_net(model: &str, dir: &Path, preset: &str) -> Vec<u8> {
    let shape: &[&str] = if model.ends_with(".onnx") {
        &["--input-shape", "x=2x3x12x12"]
    } else {
        &[]
    };
    let out = tool(
        RUN,
        &[
            &[model],
            shape,
            &[
                "--input",
                "x=testdata/onnx/conv_net_x.npy",
                preset,
                "--compare-reference",
                "--output-dir",
                dir.to_str().expect("utf-8"),
            ],
        ]
        .concat(),
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    assert!(text(&out.stdout).contains("PASS"), "{}", text(&out.stdout));
    std::fs::read(dir.join("out0.npy")).expect("out0.npy")
}

#[test]
fn an_onnx_model_runs_as_onnx_runtime_computes_it() {
    let expected =
        read_npy(&std::fs::read(root().join("testdata/onnx/conv_net_y.npy")).unwrap()).unwrap();
    for preset in ["-O0", "-O3"] {
        let dir = scratch(&format!("run{preset}"));
        let got = read_npy(&run_net(NET, &dir, preset)).expect("npy");
        let c = compare(&got, &expected, Tolerance::for_element(expected.ty.element));
        assert!(
            c.pass,
            "{preset}: max abs {:.3e} against ONNX Runtime",
            c.max_abs
        );
    }
}

#[test]
fn tessera_import_writes_text_and_side_file_that_run_the_same() {
    let dir = scratch("import");
    let tsr = dir.join("net.tsr");
    let out = tool(
        IMPORT,
        &[
            NET,
            "-o",
            tsr.to_str().unwrap(),
            "--input-shape",
            "x=2x3x12x12",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let written = std::fs::read_to_string(&tsr).expect("net.tsr");
    assert!(
        written.contains("external<\"net.safetensors\", \"conv2.weight\">"),
        "{written}"
    );
    assert!(dir.join("net.safetensors").is_file());
    // The same module from the .tsr (its weights from the side file) and from the .onnx.
    let from_tsr = run_net(tsr.to_str().unwrap(), &scratch("from-tsr"), "-O3");
    let from_onnx = run_net(NET, &scratch("from-onnx"), "-O3");
    assert_eq!(from_tsr, from_onnx);
    // The weights as parameters (their stored values by default): the same results.
    let params_dir = scratch("params");
    let out = tool(
        RUN,
        &[
            tsr.to_str().unwrap(),
            "--weights-as-params",
            "--input",
            "x=testdata/onnx/conv_net_x.npy",
            "--output-dir",
            params_dir.to_str().unwrap(),
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let as_params = std::fs::read(params_dir.join("out0.npy")).expect("out0.npy");
    let (got, want) = (read_npy(&as_params).unwrap(), read_npy(&from_tsr).unwrap());
    assert!(compare(&got, &want, Tolerance::for_element(want.ty.element)).pass);
    let out = tool(OPT, &[tsr.to_str().unwrap(), "--weights-as-params"]);
    let printed = text(&out.stdout);
    assert!(
        printed.starts_with("func @conv_net(%x: tensor<2x3x12x12xf32>, %conv1.weight: tensor<3x3x3x8xf32>, %dw.weight: tensor<3x3x1x8xf32>, %conv2.weight"),
        "{printed}"
    );
    assert!(!printed.contains("external<"), "{printed}");
    // And tessera-opt prints the imported module canonically, as written.
    let out = tool(OPT, &[NET, "--input-shape", "x=2x3x12x12"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout).replace("conv_net.safetensors", "net.safetensors"),
        written
    );
}

#[test]
fn symbolic_dimensions_default_to_one_with_a_note() {
    let out = tool(OPT, &[NET, "-O3", "--fusion-report"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains(
            "note: input 'x': dimension 0 ('N') set to 1; choose it with --input-shape x=..."
        ),
        "{stderr}"
    );
    assert!(
        text(&out.stdout).contains("kernel"),
        "{}",
        text(&out.stdout)
    );
}

#[test]
fn bad_models_are_clear_errors() {
    let out = tool(IMPORT, &["testdata/onnx/unsupported.onnx"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    for needle in [
        "2 nodes of the model cannot be imported",
        "node 'swizzle' (Swizzle) [domain com.example, opset 1]",
        "node 'unique' (Unique) [domain ai.onnx, opset 17]",
    ] {
        assert!(stderr.contains(needle), "missing '{needle}':\n{stderr}");
    }
    let dir = scratch("bad");
    let truncated = dir.join("truncated.onnx");
    let bytes = std::fs::read(root().join(NET)).unwrap();
    std::fs::write(&truncated, &bytes[..bytes.len() / 2]).unwrap();
    let out = tool(RUN, &[truncated.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("is not an ONNX model"),
        "{}",
        text(&out.stderr)
    );
    let out = tool(RUN, &[NET, "--input-shape", "x=2x3"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("has rank 4, but --input-shape gives 2"),
        "{}",
        text(&out.stderr)
    );
    let out = tool(
        RUN,
        &["testdata/models/seed_mlp.tsr", "--input-shape", "x=1"],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("--input-shape applies to ONNX models"),
        "{}",
        text(&out.stderr)
    );
    // The model's text has constants too large to print inline: -o is required.
    let out = tool(IMPORT, &[NET]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("give -o FILE.tsr"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn a_sequence_input_is_fed_element_by_element_and_its_output_written_so() {
    use tessera::exec::npy::write_npy;
    use tessera::exec::tensor::Tensor;
    use tessera::types::{ElementType, TensorType};
    const SEQ: &str = "testdata/onnx/sequences.onnx";
    let dir = scratch("sequences");
    let vector = |name: &str, values: &[f64]| {
        let ty = TensorType::new(vec![values.len() as u64], ElementType::F32);
        let path = dir.join(name);
        let bytes = write_npy(&Tensor::from_f64(&ty, values.iter().copied())).expect("npy");
        std::fs::write(&path, bytes).expect("written");
        path.to_str().expect("utf-8").to_string()
    };
    let (a, b) = (vector("a.npy", &[1.0, 2.0]), vector("b.npy", &[3.0, 4.0]));
    let out = tool(
        RUN,
        &[
            SEQ,
            "--input-shape",
            "xs=[2,2]",
            "--input-shape",
            "b=none",
            "--input",
            &format!("xs[0]={a}"),
            "--input",
            &format!("xs[1]={b}"),
            "--compare-reference",
            "--output-dir",
            dir.to_str().expect("utf-8"),
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let output = |i: usize| {
        let t =
            read_npy(&std::fs::read(dir.join(format!("out{i}.npy"))).expect("out")).expect("npy");
        (0..t.len()).map(|k| t.get_f64(k)).collect::<Vec<f64>>()
    };
    assert!(
        text(&out.stdout).contains("output 1 (s[0]): tensor<2xf32> [1, 2]"),
        "{}",
        text(&out.stdout)
    );
    // y, then s's three elements, then has (b is none).
    assert_eq!(output(0), [1.0, 2.0, 3.0, 4.0, 100.0]);
    assert_eq!(
        (output(1), output(2), output(3)),
        (vec![1.0, 2.0], vec![3.0, 4.0], vec![100.0])
    );
    assert_eq!(output(4), [0.0]);

    // A sequence's length is not in its type: without it, the import says how to give it.
    let out = tool(RUN, &[SEQ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("graph input 'xs' is a sequence")
            && text(&out.stderr).contains("--input-shape NAME=[DxD,...]"),
        "{}",
        text(&out.stderr)
    );
    let out = tool(RUN, &[SEQ, "--input-shape", "xs=[2,x]"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("NAME=[DxD,...] (a sequence)"),
        "{}",
        text(&out.stderr)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_model_of_strings_takes_and_writes_npy_strings() {
    use tessera::exec::npy::{read_npy_strings, write_npy_strings};
    const WORDS: &str = "testdata/onnx/strings.onnx";
    let dir = scratch("strings");
    let words = dir.join("words.npy");
    let given: Vec<String> = ["dog", "emu", "cat"].map(String::from).to_vec();
    std::fs::write(&words, write_npy_strings(&[3], &given)).expect("written");
    let words = words.to_str().expect("utf-8");
    let out = tool(
        RUN,
        &[
            WORDS,
            "--input",
            &format!("words={words}"),
            "--compare-reference",
            "--output-dir",
            dir.to_str().expect("utf-8"),
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout)
            .contains(r#"output 1 (reversed): strings of shape [3] ["cat", "emu", "dog"]"#),
        "{}",
        text(&out.stdout)
    );
    let is_dog = read_npy(&std::fs::read(dir.join("out0.npy")).expect("out0")).expect("npy");
    assert_eq!(
        (0..3).map(|i| is_dog.get_f64(i)).collect::<Vec<_>>(),
        [1.0, 0.0, 0.0]
    );
    let reversed =
        read_npy_strings(&std::fs::read(dir.join("out1.npy")).expect("out1")).expect("strings");
    assert_eq!(
        reversed,
        (vec![3], vec!["cat".into(), "emu".into(), "dog".into()])
    );

    // tessera-import writes the constants' strings beside the module, which holds ids.
    let tsr = dir.join("strings.tsr");
    let out = tool(IMPORT, &[WORDS, "-o", tsr.to_str().expect("utf-8")]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr)
            .contains("parameters taking ids: words; results holding them: 1 (reversed)"),
        "{}",
        text(&out.stderr)
    );
    let table = std::fs::read_to_string(dir.join("strings.strings.json")).expect("the table");
    assert_eq!(table.split_whitespace().collect::<String>(), r#"["dog"]"#);

    // Strings cannot be made up, and numbers are no strings.
    let out = tool(RUN, &[WORDS]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("argument 'words' takes strings"),
        "{}",
        text(&out.stderr)
    );
    let out = tool(
        RUN,
        &[WORDS, "--input", "words=testdata/onnx/conv_net_x.npy"],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("strings are expected"),
        "{}",
        text(&out.stderr)
    );
    let _ = std::fs::remove_dir_all(&dir);
}
