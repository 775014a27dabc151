//! The `tessera-opt` command line: exit codes, input and output paths, split and verify modes.

use crate::common::root;
use std::io::Write;
use std::process::{Command, Output, Stdio};

fn opt(args: &[&str], stdin: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_tessera-opt"))
        .env("TESSERA_TUNING_CACHE", "")
        .args(args)
        .current_dir(root())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("tessera-opt starts");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(stdin)
        .expect("stdin accepts input");
    child.wait_with_output().expect("tessera-opt finishes")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

const VALID: &str = "func @f(%x: tensor<2xf32>) -> tensor<2xf32> {\n  %y = nn.relu %x\n  return %y : tensor<2xf32>\n}\n";

#[test]
fn valid_input_prints_canonically_and_exits_0() {
    let out = opt(&["-"], VALID.as_bytes());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        VALID.replace("nn.relu %x", "nn.relu %x : tensor<2xf32>")
    );
    let out = opt(&[], VALID.as_bytes());
    assert_eq!(out.status.code(), Some(0), "no argument reads stdin");
}

#[test]
fn errors_exit_1_with_located_messages() {
    let out = opt(&["-"], b"func @f() {\n  %y = nn.relu %x\n  return\n}\n");
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty(), "no output for an invalid module");
    assert_eq!(
        text(&out.stderr),
        "<stdin>:2:16: error: use of undefined value '%x'\n  %y = nn.relu %x\n               ^~\n"
    );
}

#[test]
fn usage_errors_exit_2() {
    assert_eq!(opt(&["--no-such-flag"], b"").status.code(), Some(2));
    assert_eq!(opt(&["a.tsr", "b.tsr"], b"").status.code(), Some(2));
}

#[test]
fn unreadable_input_is_an_error() {
    let out = opt(&["no/such/file.tsr"], b"");
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).starts_with("tessera-opt: error: cannot read 'no/such/file.tsr'"));
}

#[test]
fn output_goes_to_the_named_file() {
    let path = std::env::temp_dir().join(format!("tessera-cli-{}.tsr", std::process::id()));
    let out = opt(
        &["-", "-o", path.to_str().expect("utf-8 path")],
        VALID.as_bytes(),
    );
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stdout.is_empty());
    let written = std::fs::read_to_string(&path).expect("output written");
    assert!(written.contains("nn.relu %x : tensor<2xf32>"));
    let _ = std::fs::remove_file(path);
}

#[test]
fn split_input_file_processes_chunks_alone() {
    let input = format!("{VALID}// -----\nfunc @g() {{\n  return %nope\n}}\n// -----\n{VALID}");
    let out = opt(&["-", "--split-input-file"], input.as_bytes());
    assert_eq!(out.status.code(), Some(1), "the middle chunk is invalid");
    let stderr = text(&out.stderr);
    assert!(
        stderr.starts_with("<stdin>:7:10: error: use of undefined value '%nope'"),
        "{stderr}"
    );

    let valid_twice = format!("{VALID}// -----\n{VALID}");
    let out = opt(&["-", "--split-input-file"], valid_twice.as_bytes());
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(text(&out.stdout).matches("// -----\n").count(), 1);
}

#[test]
fn verify_diagnostics_reports_unexpected_and_unmet() {
    let input = "func @f() {\n  // expected-error @+1 {{undefined value '%x'}}\n  %y = nn.relu %x\n  return\n}\n";
    let out = opt(&["-", "--verify-diagnostics"], input.as_bytes());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));

    let wrong = input.replace("'%x'", "'%z'");
    let out = opt(&["-", "--verify-diagnostics"], wrong.as_bytes());
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("error: expected error \"undefined value '%z'\" was not produced"),
        "{stderr}"
    );
    assert!(
        stderr.contains("error: unexpected error: use of undefined value '%x'"),
        "{stderr}"
    );
}

#[test]
fn help_explains_with_examples() {
    let out = opt(&["--help"], b"");
    assert_eq!(out.status.code(), Some(0));
    let help = text(&out.stdout);
    for needle in [
        "--split-input-file",
        "--verify-diagnostics",
        "Examples:",
        "Exit status",
    ] {
        assert!(help.contains(needle), "--help lacks {needle}");
    }
}
