//! The tools as child processes, with a time limit: a crash, an abort or a hang of the
//! compiler is a result to report (with its saved input), not a dead test runner.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How a tool run ended.
#[derive(Debug)]
pub struct Outcome {
    /// The command line, for the report.
    pub command: String,
    /// The exit status (`None`: killed by a signal, or by the time limit).
    pub code: Option<i32>,
    /// Whether the time limit killed it.
    pub timed_out: bool,
    /// Standard output and error.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
}

impl Outcome {
    /// A short account of a run that went wrong.
    pub fn report(&self) -> String {
        let ending = match (self.timed_out, self.code) {
            (true, _) => "timed out".to_string(),
            (false, Some(code)) => format!("exit status {code}"),
            (false, None) => "killed by a signal".to_string(),
        };
        let tail = |text: &str| {
            let lines: Vec<&str> = text.lines().collect();
            lines[lines.len().saturating_sub(12)..].join("\n")
        };
        format!(
            "{}\n  {ending}\n  stdout: {}\n  stderr: {}",
            self.command,
            tail(&self.stdout),
            tail(&self.stderr)
        )
    }
}

/// The folder of the tool binaries: `TESSERA_FUZZ_BIN_DIR` when set (release builds run
/// long fuzzing faster), else the ones cargo built for this test.
pub fn tool(name: &str) -> PathBuf {
    match std::env::var_os("TESSERA_FUZZ_BIN_DIR") {
        Some(dir) => Path::new(&dir).join(name),
        None => {
            let opt = Path::new(env!("CARGO_BIN_EXE_tessera-opt"));
            opt.with_file_name(name)
        }
    }
}

/// Runs the tool `name` with `args` in `dir`, killed after `limit`.
pub fn run_tool(name: &str, args: &[String], dir: &Path, limit: Duration) -> Outcome {
    let command = format!("{name} {}", args.join(" "));
    let spawned = Command::new(tool(name))
        .env("TESSERA_TUNING_CACHE", "")
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match spawned {
        Ok(child) => child,
        Err(e) => {
            return Outcome {
                command,
                code: None,
                timed_out: false,
                stdout: String::new(),
                stderr: format!("cannot start: {e}"),
            }
        }
    };
    // Read both pipes on threads so that a chatty child never blocks on a full pipe.
    let drain = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut text = String::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_string(&mut text);
            }
            text
        })
    };
    let stdout = drain(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let stderr = drain(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let start = Instant::now();
    let (code, timed_out) = loop {
        match child.try_wait() {
            Ok(Some(status)) => break (status.code(), false),
            Ok(None) if start.elapsed() > limit => {
                let _ = child.kill();
                let _ = child.wait();
                break (None, true);
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            Err(_) => break (None, false),
        }
    };
    Outcome {
        command,
        code,
        timed_out,
        stdout: stdout.join().unwrap_or_default(),
        stderr: stderr.join().unwrap_or_default(),
    }
}
