//! The lit-test harness: every file under `lit-tests/` is one test. Its `// RUN:` lines run
//! under bash (with `set -o pipefail`) with `tessera-opt`, LLVM's `FileCheck` and `not` on
//! the PATH, and `%s` (the file), `%S` (its folder) and `%t` (a scratch path) substituted.
//! A test passes when every RUN line exits 0.

use libtest_mimic::{Arguments, Failed, Trial};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Where Debian's LLVM 19 puts FileCheck and not.
const LLVM_BIN: &str = "/usr/lib/llvm-19/bin";

fn main() {
    let args = Arguments::from_args();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    collect(&root.join("lit-tests"), &mut files);
    files.sort();
    let trials = files
        .into_iter()
        .map(|file| {
            let name = file
                .strip_prefix(&root)
                .unwrap_or(&file)
                .display()
                .to_string();
            let root = root.clone();
            Trial::test(name, move || run_file(&root, &file))
        })
        .collect();
    libtest_mimic::run(&args, trials).exit();
}

fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect(&path, out);
        } else if matches!(
            path.extension().and_then(|e| e.to_str()),
            Some("tsr" | "mlir")
        ) {
            out.push(path);
        }
    }
}

/// The RUN commands of `text`, with `\` continuations joined.
fn run_lines(text: &str) -> Vec<String> {
    let mut commands = Vec::new();
    let mut pending = String::new();
    for line in text.lines() {
        let Some(at) = line.find("RUN:") else {
            continue;
        };
        let part = line[at + 4..].trim();
        match part.strip_suffix('\\') {
            Some(head) => {
                pending.push_str(head);
                pending.push(' ');
            }
            None => {
                pending.push_str(part);
                commands.push(std::mem::take(&mut pending));
            }
        }
    }
    commands
}

fn run_file(root: &Path, file: &Path) -> Result<(), Failed> {
    if !Path::new(LLVM_BIN).join("FileCheck").exists() {
        return Err(format!(
            "{LLVM_BIN}/FileCheck is missing: run scripts/setup.sh (package llvm-19-tools)"
        )
        .into());
    }
    let text = std::fs::read_to_string(file)
        .map_err(|e| format!("cannot read {}: {e}", file.display()))?;
    let commands = run_lines(&text);
    if commands.is_empty() {
        return Err("no RUN: line in this file".into());
    }
    let tool_dir = Path::new(env!("CARGO_BIN_EXE_tessera-opt"))
        .parent()
        .expect("the binary has a folder")
        .to_path_buf();
    let path = format!(
        "{}:{LLVM_BIN}:{}",
        tool_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let scratch = std::env::temp_dir().join(format!(
        "tessera-lit-{}-{}",
        std::process::id(),
        file.file_stem().and_then(|s| s.to_str()).unwrap_or("t")
    ));
    let dir = file.parent().unwrap_or(root);
    for command in commands {
        let expanded = command
            .replace("%s", &file.display().to_string())
            .replace("%S", &dir.display().to_string())
            .replace("%t", &scratch.display().to_string());
        let output = Command::new("bash")
            .args(["-o", "pipefail", "-c", &expanded])
            .current_dir(root)
            .env("PATH", &path)
            // A user's tuning cache must not change what the tests print.
            .env("TESSERA_TUNING_CACHE", "")
            .output()
            .map_err(|e| format!("cannot run bash: {e}"))?;
        if !output.status.success() {
            return Err(format!(
                "RUN line failed ({}):\n  {expanded}\n--- stdout ---\n{}--- stderr ---\n{}",
                output.status,
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            )
            .into());
        }
    }
    Ok(())
}
