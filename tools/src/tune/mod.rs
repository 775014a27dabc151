//! `tessera-tune`: searches each kernel's choices on this machine and writes the winners to a
//! tuning cache. The model is compiled once through `tessera-tile` with the cache to find its
//! kernels and the choices each would get (the stages' tuning marks); then, within a time
//! budget, each kernel's choices move one axis at a time (`candidates.rs`): fusions first
//! (fused or not, the epilogue's tiles), then the tiles of the kernels with the most work.
//! Every candidate is a trial (`trial.rs`): the whole model compiled with the candidate's
//! cache and timed in a child `tessera-run`, its outputs checked against the reference
//! interpreter. A candidate wins only when it is faster than the best so far by
//! [`MIN_GAIN`] in its trial and again when both run once more.

pub mod candidates;
pub mod trial;

use crate::model::load_model;
use crate::progress::Progress;
use crate::run::{check_sizes, entry_function, prepare_inputs};
use candidates::{fusion_axes, tile_axes, Axis};
use clap::Parser;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};
use tessera::exec::compare::Tolerance;
use tessera::exec::interpret::interpret;
use tessera::mlir::cpu::cpu_model::CpuModel;
use tessera::mlir::cpu::tuning::cache::{cache_path, Measured};
use tessera::mlir::cpu::tuning::kernel_key::key_loops;
use tessera::mlir::cpu::tuning::{Entry, Mark, TuningCache, TuningTarget};
use tessera::mlir::pipeline::runner::{run_pipeline, Instrumentation};
use tessera::mlir::pipeline::stages::{Program, StageEnv};
use tessera::mlir::pipeline::Pipeline;
use tessera::mlir::MlirContext;
use trial::{Rejected, Runner};

/// The least gain a candidate must show, over the best so far, to win: the medians of two
/// trials of one binary on a quiet machine differ by 1-2%.
pub const MIN_GAIN: f64 = 0.03;

/// Kernels with less work than this (elements of their loops) are not tuned: their choices
/// cannot move a call's time beyond noise.
const MIN_KERNEL_WORK: i64 = 1 << 12;

/// How long the calls of one trial should take together.
const TRIAL_CALLS_TIME: Duration = Duration::from_millis(200);

#[derive(Parser, Debug)]
#[command(
    name = "tessera-tune",
    about = "Search each kernel's tiles, packing and fusion on this machine, and write the winners to a tuning cache",
    after_help = "Every compile at -O2 or -O3 (tessera-opt, tessera-run, tessera-bench) then uses the cache's choices for the kernels it has entries for.\n\nExamples:\n  tessera-tune model.tsr --budget 30s\n  tessera-tune model.tsr --entry mlp --threads 2 --tuning-cache tuned.json"
)]
pub struct TuneArgs {
    /// The model (.tsr, or .onnx imported on the fly).
    pub model: PathBuf,
    /// For an ONNX model: fix an input's symbolic dimensions, NAME=1x3x224x224.
    #[arg(long = "input-shape", value_name = "NAME=SHAPE")]
    pub input_shapes: Vec<String>,
    /// The function to tune; may be omitted when the model has one.
    #[arg(long)]
    pub entry: Option<String>,
    /// The threads the tuned code will run on (entries are kept per thread count).
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub threads: u32,
    /// How long to search: 90s, 2m, 500ms.
    #[arg(long, value_name = "TIME", default_value = "60s")]
    pub budget: String,
    /// The tuning cache to update (default: the file TESSERA_TUNING_CACHE names, else
    /// ~/.cache/tessera/tuning.json).
    #[arg(long, value_name = "FILE")]
    pub tuning_cache: Option<PathBuf>,
}

/// What to tune.
pub struct Request {
    /// The model.
    pub model: PathBuf,
    /// For an ONNX model: its input shapes (`NAME=SHAPE`).
    pub input_shapes: Vec<String>,
    /// The function.
    pub entry: Option<String>,
    /// Threads.
    pub threads: u32,
    /// The search's time budget.
    pub budget: Duration,
    /// The tuning cache to update.
    pub cache: PathBuf,
}

/// One kernel tuned: searched to the end, or until the budget ran out with a better choice.
pub struct Tuned {
    /// Its key.
    pub kernel: String,
    /// What changed (`cache [0, 64, 256] -> [0, 128, 256]`, ...); none where the choice it
    /// started from (the strategy's, or the cache's) held.
    pub changes: Vec<String>,
    /// The entry of the choice it started from.
    initial: Entry,
}

/// What a tuning run found.
pub struct Outcome {
    /// The function tuned.
    pub entry: String,
    /// The target entries were written for.
    pub target: String,
    /// A call with the strategy's choices alone, in milliseconds.
    pub strategy_ms: f64,
    /// A call with the cache's choices after tuning, in milliseconds.
    pub tuned_ms: f64,
    /// Trials run, and how many of them did not count.
    pub trials: usize,
    /// Trials that failed, timed out or disagreed with the reference.
    pub rejected: usize,
    /// The kernels tuned.
    pub tuned: Vec<Tuned>,
    /// Whether the cache file was written.
    pub written: bool,
    /// How long the search took.
    pub elapsed: Duration,
}

/// A duration written as `90s`, `2m`, `500ms` or a number of seconds.
pub fn parse_budget(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let (number, scale) = if let Some(n) = text.strip_suffix("ms") {
        (n, 1e-3)
    } else if let Some(n) = text.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = text.strip_suffix('m') {
        (n, 60.0)
    } else {
        (text, 1.0)
    };
    number
        .trim()
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && *v >= 0.0 && v * scale <= 86_400.0)
        .map(|v| Duration::from_secs_f64(v * scale))
        .ok_or_else(|| format!("--budget '{text}' is not a time such as 90s, 2m or 500ms"))
}

/// Runs `tessera-tune`: the summary to `out`, progress and errors to `err`.
pub fn run_tune(args: &TuneArgs, out: &mut dyn Write, err: &mut dyn Write) -> ExitCode {
    let budget = match parse_budget(&args.budget) {
        Ok(budget) => budget,
        Err(message) => {
            let _ = writeln!(err, "tessera-tune: error: {message}");
            return ExitCode::from(2);
        }
    };
    let Some(cache) = cache_path(args.tuning_cache.as_deref()) else {
        let _ = writeln!(err, "tessera-tune: error: no tuning cache to write: TESSERA_TUNING_CACHE is empty and there is no HOME; name one with --tuning-cache FILE");
        return ExitCode::from(2);
    };
    let request = Request {
        model: args.model.clone(),
        input_shapes: args.input_shapes.clone(),
        entry: args.entry.clone(),
        threads: args.threads,
        budget,
        cache,
    };
    match tune(&request, err) {
        Ok(outcome) => {
            let _ = out.write_all(summary(&request, &outcome).as_bytes());
            ExitCode::SUCCESS
        }
        Err(message) => {
            let message = message.trim_end();
            if message.starts_with("tessera-") || message.contains(": error: ") {
                let _ = writeln!(err, "{message}");
            } else {
                let _ = writeln!(err, "tessera-tune: error: {message}");
            }
            ExitCode::FAILURE
        }
    }
}

/// The summary a run prints.
pub fn summary(request: &Request, outcome: &Outcome) -> String {
    let mut text = format!(
        "{} @{} on {} thread(s), target {}\nstrategy {:.4} ms a call, tuned {:.4} ms ({:.2}x), {} trials ({} rejected) in {:.1} s\n",
        request.model.display(),
        outcome.entry,
        request.threads,
        outcome.target,
        outcome.strategy_ms,
        outcome.tuned_ms,
        outcome.strategy_ms / outcome.tuned_ms.max(1e-9),
        outcome.trials,
        outcome.rejected,
        outcome.elapsed.as_secs_f64()
    );
    if outcome.tuned.is_empty() {
        text.push_str("no kernel was searched to the end within the budget\n");
    }
    for tuned in &outcome.tuned {
        let changes = if tuned.changes.is_empty() {
            "kept its choice".to_string()
        } else {
            tuned.changes.join(", ")
        };
        text.push_str(&format!("  {}: {changes}\n", tuned.kernel));
    }
    if outcome.written {
        text.push_str(&format!("written to {}\n", request.cache.display()));
    } else {
        text.push_str(&format!("{} left as it was\n", request.cache.display()));
    }
    text
}

/// A folder of this run's own under the system's temporary folder, removed when dropped.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The tuning marks of `module`'s function compiled through `tessera-tile` with the cache at
/// `cache` on `threads` threads.
fn discover(model: &crate::model::Model, cache: &Path, threads: u32) -> Result<Vec<Mark>, String> {
    let mut pipeline = Pipeline::preset(3, true).with_threads(threads as usize);
    pipeline.set_tuning_cache(&cache.display().to_string(), None, None);
    let end = pipeline
        .elements
        .iter()
        .position(|e| e.name() == "tessera-tile")
        .ok_or("the -O3 preset has no tessera-tile")?;
    pipeline.elements.truncate(end + 1);
    let context = MlirContext::new();
    let env = StageEnv {
        context: &context,
        file: &model.file,
    };
    let program = Program::Graph(model.module.clone());
    let (program, _) = run_pipeline(
        program,
        &pipeline,
        &env,
        &Instrumentation::default(),
        &mut std::io::sink(),
    )
    .map_err(|failure| tessera::diag::render_all(&failure.diagnostics, &model.file))?;
    match program {
        Program::Mlir(module) => Ok(Mark::all_in(&module)),
        Program::Graph(_) => Err("the pipeline did not convert the model".into()),
    }
}

/// The search's state: the entries accepted so far and the time they give.
struct Search<'a> {
    runner: Runner,
    accepted: TuningCache,
    best_ms: f64,
    trials: usize,
    rejected: usize,
    start: Instant,
    budget: Duration,
    progress: Progress<'a>,
    tuned: Vec<Tuned>,
}

impl Search<'_> {
    /// The cache file of `cache`, written for a trial.
    fn write(&self, cache: &TuningCache, name: &str) -> Result<PathBuf, String> {
        let path = self.runner.scratch.join(name);
        cache
            .save(&path)
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        Ok(path)
    }

    /// Whether the budget is spent.
    fn spent(&self) -> bool {
        self.start.elapsed() >= self.budget
    }

    /// One trial of the accepted entries plus `entry`: its median, or `None` when rejected.
    fn try_entry(&mut self, entry: &Entry, what: &str) -> Result<Option<f64>, String> {
        let mut cache = self.accepted.clone();
        cache.insert(entry.clone());
        let path = self.write(&cache, "candidate.json")?;
        self.trials += 1;
        let elapsed = self.start.elapsed().as_secs() as usize;
        self.progress.show(
            elapsed.min(self.budget.as_secs() as usize),
            &format!("{what} (best {:.3} ms)", self.best_ms),
        );
        match self.runner.trial(Some(&path), self.runner.calls) {
            Ok(timing) => Ok(Some(timing.median_ms)),
            Err(Rejected::Failed(why)) if why.starts_with("cannot start") => Err(why),
            Err(_) => {
                self.rejected += 1;
                Ok(None)
            }
        }
    }

    /// A trial of the accepted entries alone.
    fn try_accepted(&mut self) -> Result<Option<f64>, String> {
        let path = self.write(&self.accepted.clone(), "accepted.json")?;
        self.trials += 1;
        Ok(self
            .runner
            .trial(Some(&path), self.runner.calls)
            .ok()
            .map(|t| t.median_ms))
    }

    /// Moves one kernel's choice along each of its axes; `make` builds the entry of a choice,
    /// `axes` the axes around a choice. Returns the changes accepted.
    fn tune_kernel<C: Clone + PartialEq>(
        &mut self,
        kernel: &str,
        mut current: C,
        make: impl Fn(&C) -> Entry,
        axes: impl Fn(&C) -> Vec<Axis<C>>,
        describe: impl Fn(&C, &C, &str) -> String,
    ) -> Result<(), String> {
        let initial = make(&current);
        let mut changes = Vec::new();
        let mut finished = true;
        // The axes around the current choice, each once (a change, such as fusing, may open
        // axes the choice before had not).
        let mut visited = std::collections::BTreeSet::new();
        while let Some(axis) = axes(&current)
            .into_iter()
            .find(|a| !visited.contains(&a.name))
        {
            let name = axis.name.clone();
            visited.insert(name.clone());
            let mut best: Option<(f64, C)> = None;
            for candidate in axis.candidates {
                if self.spent() {
                    finished = false;
                    break;
                }
                let what = format!(
                    "{} {}",
                    short(kernel),
                    describe(&current, &candidate, &name)
                );
                if let Some(ms) = self.try_entry(&make(&candidate), &what)? {
                    if best.as_ref().is_none_or(|(b, _)| ms < *b) {
                        best = Some((ms, candidate));
                    }
                }
            }
            let Some((ms, candidate)) = best else {
                continue;
            };
            if ms >= self.best_ms * (1.0 - MIN_GAIN) {
                continue;
            }
            // Confirm: the candidate and the accepted entries once more each.
            let again = self.try_entry(&make(&candidate), "confirming")?;
            let accepted = self.try_accepted()?.unwrap_or(self.best_ms);
            match again {
                Some(again) if again < accepted * (1.0 - MIN_GAIN) => {
                    changes.push(describe(&current, &candidate, &name));
                    self.accepted.insert(make(&candidate));
                    self.best_ms = again;
                    current = candidate;
                }
                _ => {}
            }
        }
        if !finished && changes.is_empty() {
            return Ok(());
        }
        if changes.is_empty() {
            // The strategy's choice (or the cache's) held: recorded as tuned, where it is one
            // a cache may hold.
            if initial.check().is_err() {
                return Ok(());
            }
            self.accepted.insert(initial.clone());
        }
        self.tuned.push(Tuned {
            kernel: kernel.to_string(),
            changes,
            initial,
        });
        Ok(())
    }
}

/// The first words of a kernel key, for a progress line.
fn short(kernel: &str) -> String {
    let words: Vec<&str> = kernel.split(' ').collect();
    let loops = kernel
        .find('[')
        .and_then(|s| kernel[s..].find(']').map(|e| &kernel[s..=s + e]))
        .unwrap_or("");
    match words.first() {
        Some(&"fuse") => format!("fuse {} {loops}", words.get(1).unwrap_or(&"")),
        Some(name) => format!("{name} {loops}"),
        None => String::new(),
    }
}

/// What a path given to a stage as an option (`tuning=FILE`) may not hold.
pub const UNSAFE_IN_OPTIONS: [char; 5] = [' ', ',', '{', '}', '='];

/// Whether the cache file at `path` can be written (its folder made if missing): checked
/// before the search, so that a bad path does not cost a whole budget.
fn check_writable(path: &Path) -> Result<(), String> {
    let cannot =
        |e: std::io::Error| format!("cannot write the tuning cache {}: {e}", path.display());
    if path.is_dir() {
        return Err(format!(
            "cannot write the tuning cache {}: it is a folder",
            path.display()
        ));
    }
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(cannot)?;
    }
    let existed = path.exists();
    std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)
        .map_err(cannot)?;
    if !existed {
        let _ = std::fs::remove_file(path);
    }
    Ok(())
}

/// Tunes the model of `request`, writing what wins to its cache; progress on `err`.
pub fn tune(request: &Request, err: &mut dyn Write) -> Result<Outcome, String> {
    let start = Instant::now();
    let model = load_model(&request.model, &request.input_shapes, "tessera-tune")?;
    let entry = entry_function(&model.module, request.entry.as_deref())?;
    check_sizes(&model.module)?;
    let func_name = model.module.funcs[entry].name.clone();
    let mut strings = model.strings.clone();
    let inputs = prepare_inputs(&model.module, entry, &[], &model.aliases, &[], &mut strings)?;
    let scratch = Scratch(std::env::temp_dir().join(format!(
        "tessera-tune-{}-{}",
        std::process::id(),
        start.elapsed().as_nanos()
    )));
    std::fs::create_dir_all(&scratch.0)
        .map_err(|e| format!("cannot make {}: {e}", scratch.0.display()))?;
    check_writable(&request.cache)?;
    let existing = TuningCache::load(&request.cache);
    for problem in &existing.problems {
        let _ = writeln!(err, "warning: {problem}");
    }
    if existing.problems.iter().any(|p| p.whole_file) {
        return Err(format!(
            "{} is not a tuning cache this tessera can update; move it away or name another file with --tuning-cache",
            request.cache.display()
        ));
    }
    for path in [&request.cache, &scratch.0] {
        if path.display().to_string().contains(UNSAFE_IN_OPTIONS) {
            return Err(format!(
                "{}: a path with spaces, commas, braces or '=' cannot be a pipeline option; name another with --tuning-cache (or set TMPDIR)",
                path.display()
            ));
        }
    }
    let reference = interpret(&model.module, entry, &inputs)
        .map_err(|e| format!("the reference interpreter: {e}"))?;
    let host = CpuModel::host();
    let target = TuningTarget {
        cpu: host.cpu.clone(),
        unit: if host.lanes >= 16 { "avx512" } else { "avx2" },
        l2_bytes: host.l2_bytes,
        threads: i64::from(request.threads),
    }
    .to_string();
    let binary = std::env::current_exe()
        .map_err(|e| format!("cannot find tessera-tune's own path: {e}"))?
        .with_file_name("tessera-run");
    let mut model_args = vec![
        request.model.display().to_string(),
        "--entry".into(),
        func_name.clone(),
        "--threads".into(),
        request.threads.to_string(),
    ];
    for shape in &request.input_shapes {
        model_args.push("--input-shape".into());
        model_args.push(shape.clone());
    }
    let mut runner = Runner {
        binary,
        model_args,
        scratch: scratch.0.clone(),
        reference,
        tolerance: Tolerance::for_function(&model.module, entry),
        strategy_error: f64::INFINITY,
        strategy_outputs: Vec::new(),
        calls: 3,
        limit: Duration::from_secs(120),
    };
    // The strategy alone: its time sets how many calls a trial times and how long it may take.
    let first = Instant::now();
    let probe = runner
        .trial(None, 3)
        .map_err(|why| format!("the model compiled with the strategy's choices {why}"))?;
    runner.limit = (first.elapsed() * 20).max(Duration::from_secs(30));
    runner.calls = ((TRIAL_CALLS_TIME.as_secs_f64() * 1e3 / probe.median_ms.max(1e-6)) as usize)
        .clamp(5, 2000);
    let strategy = runner
        .trial(None, runner.calls)
        .map_err(|why| format!("the model compiled with the strategy's choices {why}"))?;
    runner.strategy_error = strategy.max_abs;
    runner.strategy_outputs = runner.last_outputs()?;
    let mut search = Search {
        runner,
        accepted: existing.cache.clone(),
        best_ms: strategy.median_ms,
        trials: 2,
        rejected: 0,
        start,
        budget: request.budget,
        progress: Progress::new(err, request.budget.as_secs().max(1) as usize),
        tuned: Vec::new(),
    };
    if search.accepted.entries().any(|e| e.target == target) {
        match search.try_accepted()? {
            Some(ms) => search.best_ms = ms,
            None => {
                search.progress.line(&format!(
                    "warning: the model compiled with the cache's entries for {target} fails or disagrees with the reference; starting from the strategy's choices, and the entries this run tunes replace those"
                ));
                let stale: Vec<String> = search
                    .accepted
                    .entries()
                    .filter(|e| e.target == target)
                    .map(|e| e.kernel.clone())
                    .collect();
                for kernel in stale {
                    search.accepted.remove(&target, &kernel);
                }
            }
        }
    }
    // Fusions first: what they choose changes the kernels the tiles are chosen for.
    let marks = discover(
        &model,
        &search.write(&search.accepted.clone(), "accepted.json")?,
        request.threads,
    )?;
    let mut seen = std::collections::BTreeSet::new();
    for mark in marks.iter().filter(|m| m.fusion.is_some()) {
        let (Some(fusion), Some(loops)) = (&mark.fusion, key_loops(&mark.kernel)) else {
            continue;
        };
        if !seen.insert(mark.kernel.clone()) || search.spent() {
            continue;
        }
        let kernel = mark.kernel.clone();
        let make = |choice: &tessera::mlir::cpu::tuning::FusionChoice| Entry {
            target: target.clone(),
            kernel: kernel.clone(),
            tiles: None,
            fusion: Some(choice.clone()),
            measured: None,
        };
        search.tune_kernel(
            &kernel,
            fusion.clone(),
            make,
            |c| fusion_axes(c, &loops),
            |from, to, axis| match axis {
                "fuse" => format!("fuse {} -> {}", from.fuse, to.fuse),
                _ => format!("tiles {:?} -> {:?}", from.tiles, to.tiles),
            },
        )?;
    }
    let marks = discover(
        &model,
        &search.write(&search.accepted.clone(), "accepted.json")?,
        request.threads,
    )?;
    let mut tiles: Vec<(i64, Mark)> = marks
        .into_iter()
        .filter(|m| m.tiles.is_some())
        .filter_map(|m| {
            let work = key_loops(&m.kernel)?
                .0
                .iter()
                .fold(1i64, |w, &(e, _)| w.saturating_mul(e));
            (work >= MIN_KERNEL_WORK).then_some((work, m))
        })
        .collect();
    tiles.sort_by_key(|(work, _)| std::cmp::Reverse(*work));
    for (_, mark) in tiles {
        let (Some(choice), Some(loops)) = (&mark.tiles, key_loops(&mark.kernel)) else {
            continue;
        };
        if !seen.insert(mark.kernel.clone()) || search.spent() {
            continue;
        }
        let kernel = mark.kernel.clone();
        let make = |choice: &tessera::mlir::cpu::tuning::TileChoice| Entry {
            target: target.clone(),
            kernel: kernel.clone(),
            tiles: Some(choice.clone()),
            fusion: None,
            measured: None,
        };
        search.tune_kernel(
            &kernel,
            choice.clone(),
            make,
            |c| tile_axes(c, &loops, &kernel),
            |from, to, axis| match axis {
                "order" => format!("order {:?} -> {:?}", from.order, to.order),
                "panels" => format!("panels {} -> {}", from.panels, to.panels),
                a if a.starts_with("cache") => {
                    format!("cache {:?} -> {:?}", from.cache, to.cache)
                }
                _ => format!("register {:?} -> {:?}", from.register, to.register),
            },
        )?;
    }
    search.progress.finish();
    // The verdict: the strategy and the tuned entries, alternately, twice each.
    let mut strategy_ms = strategy.median_ms;
    let mut tuned_ms = search.best_ms;
    if !search.tuned.is_empty() {
        (strategy_ms, tuned_ms) = (f64::INFINITY, f64::INFINITY);
        for _ in 0..2 {
            search.trials += 1;
            if let Ok(t) = search.runner.trial(None, search.runner.calls) {
                strategy_ms = strategy_ms.min(t.median_ms);
            }
            if let Some(ms) = search.try_accepted()? {
                tuned_ms = tuned_ms.min(ms);
            }
        }
        let changed = search.tuned.iter().any(|t| !t.changes.is_empty());
        if changed && tuned_ms >= strategy_ms {
            // Noise won: every kernel keeps the choice it started from.
            for tuned in &mut search.tuned {
                search.accepted.insert(tuned.initial.clone());
                tuned.changes.clear();
            }
            if let Some(ms) = search.try_accepted()? {
                tuned_ms = ms;
            }
        }
        if !strategy_ms.is_finite() {
            strategy_ms = strategy.median_ms;
        }
        if !tuned_ms.is_finite() {
            tuned_ms = search.best_ms;
        }
    }
    let written = !search.tuned.is_empty();
    if written {
        let mut cache = existing.cache;
        let measured = Measured {
            model: format!("{} @{func_name}", request.model.display()),
            strategy_ms,
            tuned_ms,
        };
        for tuned in &search.tuned {
            if let Some(entry) = search.accepted.get(&target, &tuned.kernel) {
                let mut entry = entry.clone();
                entry.measured = Some(measured.clone());
                cache.insert(entry);
            }
        }
        cache.save(&request.cache).map_err(|e| {
            format!(
                "cannot write the tuning cache {}: {e}",
                request.cache.display()
            )
        })?;
    }
    Ok(Outcome {
        entry: func_name,
        target,
        strategy_ms,
        tuned_ms,
        trials: search.trials,
        rejected: search.rejected,
        tuned: search.tuned,
        written,
        elapsed: start.elapsed(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budgets_read_in_any_unit() {
        assert_eq!(parse_budget("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_budget("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_budget("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_budget("3"), Ok(Duration::from_secs(3)));
        assert!(parse_budget("soon").is_err());
        assert!(parse_budget("-1s").is_err());
    }

    #[test]
    fn progress_lines_name_the_kernel_briefly() {
        assert_eq!(
            short("linalg.matmul [64, 96, 128r] f32 f32 f32"),
            "linalg.matmul [64, 96, 128r]"
        );
        assert_eq!(
            short("fuse linalg.matmul [64, 96, 128r] f32 into linalg.generic [64, 96] f32"),
            "fuse linalg.matmul [64, 96, 128r]"
        );
    }
}
