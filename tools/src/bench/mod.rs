//! `tessera-bench`: the seed's comparison in one command. Each workload (the built-in suite,
//! or a user model) is compiled and timed in each mode (`-O0` op by op, `-O3 --no-fusion`,
//! `-O3`): compile time (per stage too), first call, steady latency (median, p10, p90),
//! GFLOP/s and GB/s, the fraction of the machine's limit that binds it (measured in the same
//! run), peak bytes allocated by the compiled code and the number of kernels.

pub mod chart;
pub mod compile_scaling;
pub mod gpu;
pub mod limits;
pub mod measure;
pub mod report;
pub mod workloads;

use crate::model::{import_onnx, is_onnx, side_file_for};
use crate::opt::TargetArg;
use crate::progress::Progress;
use clap::Parser;
use limits::Limits;
use measure::{time_calls, Budget, Latency};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};
use tessera::diag::render_all;
use tessera::exec::npy::write_npy;
use tessera::exec::random::random_tensor;
use tessera::exec::tensor::Tensor;
use tessera::frontend::decode;
use tessera::mlir::cpu::compile::{compile, jit_options};
use tessera::mlir::cpu::runtime::alloc_counter;
use tessera::mlir::cpu::runtime::memref::{element_bytes, HostBuffer};
use tessera::mlir::pipeline::fusion_report::report_of_pipeline;
use tessera::mlir::pipeline::runner::StepTime;
use tessera::mlir::pipeline::stages::{Program, StageEnv};
use tessera::mlir::pipeline::Pipeline;
use tessera::mlir::MlirContext;
use tessera::transforms::decompose::decompose;
use workloads::{Bound, Workload, BUILTIN_IDS, EXTRA_IDS};

/// Command-line options of `tessera-bench`.
#[derive(Parser, Debug)]
#[command(
    name = "tessera-bench",
    version,
    about = "Benchmark tessera: compile and time workloads op by op (-O0), unfused (-O3 --no-fusion) and fused (-O3).",
    after_help = "\
Without MODEL, the built-in suite runs (fp32, weights as function arguments, random inputs
from a fixed seed): w1_b1 w1_b64 w1_b4096 (the seed MLP at batch 1, 64, 4096), w2
(MLP-large), w3 (matmul 1024^3), w4 (layer_norm -> gelu -> + x on 4096x1024), w5
(attention, 512x64), w6 (a small conv net, batch 32); w3_4096 (matmul 4096^3) runs only
when named. Without -O or --no-fusion, every mode runs. The workload `compile` (not in the default suite) compiles generated chains of 50, 100,
200, 400 and 800 ops (dense + tanh) at -O0 and -O3 (or the modes named) and reports each
stage's milliseconds per op: flat columns mean stages linear in the model's size. The machine's limits (FMA peak of one core, copy bandwidth) are measured first; each
result is also given as a fraction of the limit that binds it (roofline: whichever of its
flops at the FMA peak and its input and output bytes at the copy bandwidth takes longer). On
N threads the FMA limit is N cores' peak; the copy bandwidth stays one core's.

Examples:
  tessera-bench
  tessera-bench --workload w3,w4 --json out.json --chart out.svg
  tessera-bench model.tsr --entry f -O0 -O3 --no-fusion
  tessera-bench --workload w2,w3 -O3 --threads 1,2
  tessera-bench --workload compile      compile time per op and stage, chains of 50..800 ops
  tessera-bench --target=cuda --workload w1_b1,w3,w3_4096,w4,w5 --json gpu.json

With --target=cuda the workloads run on GPU 0: per call the device time of its kernels (CUDA
events; each kernel's too) and the host's time of the whole call with its copies; the
device's FP32 FMA peak (a generated kernel) and copy bandwidth are measured first."
)]
pub struct BenchArgs {
    /// A model to benchmark instead of the built-in suite (.tsr, or .onnx imported).
    pub model: Option<PathBuf>,
    /// For an ONNX model: fix an input's symbolic dimensions, NAME=1x3x224x224 (unknown ones
    /// default to 1); a sequence input's elements, NAME=[2x3,5]; an empty optional, NAME=none.
    #[arg(long = "input-shape", value_name = "NAME=SHAPE")]
    pub input_shapes: Vec<String>,
    /// The model's function to time; may be omitted when it has one.
    #[arg(long)]
    pub entry: Option<String>,
    /// Built-in workloads to run, by id, comma-separated (default: all).
    #[arg(long, value_delimiter = ',', conflicts_with = "model")]
    pub workload: Vec<String>,
    /// A mode: -O0 .. -O3 (repeatable).
    #[arg(short = 'O', value_name = "LEVEL", value_parser = clap::value_parser!(u8).range(0..=3))]
    pub opt_levels: Vec<u8>,
    /// The mode -O3 --no-fusion.
    #[arg(long)]
    pub no_fusion: bool,
    /// Thread counts to run each mode on, comma-separated (-O0, untiled, has no parallel
    /// loops and runs on one thread only).
    #[arg(long, value_name = "N", value_delimiter = ',', default_value = "1", value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub threads: Vec<u32>,
    /// Seconds of timed calls per workload and mode (a tenth more for the warm-up; at least
    /// 3 calls whatever they take).
    #[arg(long, value_name = "SECONDS", default_value_t = 1.0)]
    pub time: f64,
    /// Write every result as JSON.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Draw a bar chart per workload (modes side by side, and the limit) as SVG.
    #[arg(long, value_name = "FILE")]
    pub chart: Option<PathBuf>,
    /// Where the workloads run: cpu (this machine, one core per thread) or cuda (GPU 0:
    /// device time by CUDA events and host call time, against the device's limits).
    #[arg(long, value_enum, default_value = "cpu")]
    pub target: TargetArg,
    /// Write each workload's inputs and outputs (of its first mode) as
    /// DIR/<workload>/in<i>.npy and out<i>.npy, for comparing other systems on the same data.
    #[arg(long, value_name = "DIR")]
    pub save_io: Option<PathBuf>,
    /// The tuning cache whose choices the CPU compiles use (default: the file
    /// TESSERA_TUNING_CACHE names, else ~/.cache/tessera/tuning.json).
    #[arg(long, value_name = "FILE")]
    pub tuning_cache: Option<PathBuf>,
    /// Tune each workload on each thread count first (tessera-tune), writing the winners to
    /// the tuning cache the measurements then use.
    #[arg(long)]
    pub tune: bool,
    /// With --tune: the search's time per workload and thread count (90s, 2m, 500ms).
    #[arg(long, value_name = "TIME", default_value = "30s")]
    pub tune_budget: String,
}

/// A way of compiling: a preset with or without fusion.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mode {
    /// `-O` level.
    pub level: u8,
    /// Whether `tessera-fuse` runs.
    pub fusion: bool,
}

impl Mode {
    /// As written on the command line (`-O3 --no-fusion`).
    pub fn label(&self) -> String {
        if self.fusion || self.level == 0 {
            format!("-O{}", self.level)
        } else {
            format!("-O{} --no-fusion", self.level)
        }
    }
}

/// One workload in one mode.
#[derive(Clone, Debug)]
pub struct Measurement {
    /// The workload's id.
    pub workload: String,
    /// The mode.
    pub mode: Mode,
    /// Threads the compiled code ran on.
    pub threads: usize,
    /// Every compile step, then the JIT.
    pub compile: Vec<StepTime>,
    /// The first call after compiling.
    pub first_call: Duration,
    /// Steady-state latency.
    pub latency: Latency,
    /// Arithmetic operations per call (counted on the decomposed model).
    pub flops: u64,
    /// Bytes of the inputs and outputs (the least memory traffic a call can have).
    pub bytes: u64,
    /// The most bytes the compiled code held allocated at once during a call.
    pub peak_bytes: usize,
    /// Loop nests of the timed function after fusion (or conversion).
    pub kernels: usize,
    /// What bounds the workload.
    pub bound: Bound,
}

impl Measurement {
    /// GFLOP/s at the median.
    pub fn gflops(&self) -> f64 {
        self.flops as f64 / self.latency.median.as_secs_f64() / 1e9
    }

    /// GB/s of the inputs and outputs at the median.
    pub fn gbps(&self) -> f64 {
        self.bytes as f64 / self.latency.median.as_secs_f64() / 1e9
    }

    /// The least time the machine's limits allow (roofline), and which limit it is.
    pub fn floor(&self, limits: &Limits) -> (Duration, &'static str) {
        let compute = self.flops as f64 / (limits.fma_gflops * 1e9 * self.threads as f64);
        let memory = self.bytes as f64 / (limits.copy_gbps * 1e9);
        if compute >= memory {
            (Duration::from_secs_f64(compute), "fma")
        } else {
            (Duration::from_secs_f64(memory), "copy")
        }
    }

    /// The fraction of the binding limit reached at the median.
    pub fn fraction_of_limit(&self, limits: &Limits) -> f64 {
        self.floor(limits).0.as_secs_f64() / self.latency.median.as_secs_f64()
    }

    /// The mode and, past one, the thread count (`-O3, 2 threads`).
    pub fn label(&self) -> String {
        run_label(self.mode, self.threads)
    }

    /// The total compile time.
    pub fn compile_time(&self) -> Duration {
        self.compile.iter().map(|s| s.time).sum()
    }
}

/// Runs `tessera-bench`: the table to `out`, progress and errors to `err`.
pub fn run_bench(args: &BenchArgs, out: &mut dyn Write, err: &mut dyn Write) -> ExitCode {
    let text = match bench(args, out, err) {
        Ok(()) => return ExitCode::SUCCESS,
        Err(Failure::Message(message)) => format!("tessera-bench: error: {message}"),
        Err(Failure::Diagnostics(rendered)) => rendered,
    };
    let _ = writeln!(err, "{}", text.trim_end());
    ExitCode::FAILURE
}

/// Why a run stopped.
pub enum Failure {
    /// A message of tessera-bench's own.
    Message(String),
    /// Diagnostics of a model, rendered (`file:line:col: error: ...` with the source line).
    Diagnostics(String),
}

impl From<String> for Failure {
    fn from(message: String) -> Failure {
        Failure::Message(message)
    }
}

fn bench(args: &BenchArgs, out: &mut dyn Write, err: &mut dyn Write) -> Result<(), Failure> {
    if !(args.time.is_finite() && args.time >= 0.0) {
        return Err(format!("--time must be a number of seconds, not {}", args.time).into());
    }
    let scaling = args
        .workload
        .iter()
        .any(|w| w.trim() == compile_scaling::ID);
    let workloads = if scaling && args.workload.len() == 1 {
        Vec::new()
    } else {
        chosen_workloads(args)?
    };
    let modes = chosen_modes(args);
    if args.target == TargetArg::Cuda {
        if scaling {
            return Err(format!("the workload '{}' measures compile time, which does not depend on --target: run it without --target=cuda", compile_scaling::ID).into());
        }
        if args.threads != [1] {
            return Err("--threads does not apply to --target=cuda"
                .to_string()
                .into());
        }
        if args.chart.is_some() {
            return Err("--chart applies to the CPU target".to_string().into());
        }
        let time = Duration::from_secs_f64(args.time);
        let files = gpu::Files {
            json: args.json.as_deref(),
            save_io: args.save_io.as_deref(),
        };
        return gpu::bench(&workloads, &modes, time, files, out, err);
    }
    let mut threads: Vec<usize> = args.threads.iter().map(|&n| n as usize).collect();
    threads.sort_unstable();
    threads.dedup();
    let runs: Vec<(Mode, usize)> = modes
        .iter()
        .flat_map(|&mode| threads.iter().map(move |&n| (mode, n)))
        .filter(|&(mode, n)| n == 1 || mode.level > 0)
        .collect();
    let time = Duration::from_secs_f64(args.time);
    // The compile workload compiles its chains op by op and fused unless modes are named.
    let scaling_modes: Vec<Mode> = match (scaling, args.opt_levels.is_empty() && !args.no_fusion) {
        (false, _) => Vec::new(),
        (true, true) => vec![
            Mode {
                level: 0,
                fusion: true,
            },
            Mode {
                level: 3,
                fusion: true,
            },
        ],
        (true, false) => modes.clone(),
    };
    if args.tune {
        tune_workloads(args, &workloads, &threads, err)?;
    }
    let tuning_cache = crate::tuning_cache::usable(args.tuning_cache.as_deref(), err);
    let scaling_runs = scaling_modes.len() * compile_scaling::CHAIN_OPS.len();
    let mut progress = Progress::new(err, workloads.len() * runs.len() + scaling_runs + 1);
    progress.step("machine limits");
    let limits = limits::measure(time.max(Duration::from_millis(50)))?;
    let mut results = Vec::new();
    for workload in &workloads {
        for (index, &(mode, threads)) in runs.iter().enumerate() {
            progress.step(&format!("{} {}", workload.id, run_label(mode, threads)));
            let save = args
                .save_io
                .as_ref()
                .filter(|_| index == 0)
                .map(|dir| dir.join(&workload.id));
            results.push(measure_workload(
                workload,
                mode,
                threads,
                time,
                save.as_deref(),
                tuning_cache.as_deref(),
            )?);
        }
    }
    let compile_runs = compile_scaling::measure(&scaling_modes, |label| progress.step(label))?;
    progress.finish();
    let mut table = String::new();
    if !workloads.is_empty() {
        table.push_str(&report::table(
            &workloads,
            &results,
            &limits,
            tuning_cache.as_deref(),
        ));
    }
    if scaling {
        table.push_str(&compile_scaling::table(&compile_runs));
    }
    out.write_all(table.as_bytes())
        .map_err(|e| format!("cannot write the table: {e}"))?;
    if let Some(path) = &args.json {
        let scaling_json = scaling.then(|| compile_scaling::json(&compile_runs));
        let json = report::json(
            &workloads,
            &results,
            &limits,
            &settings(args, &modes, &threads, tuning_cache.as_deref()),
            scaling_json.as_deref(),
        );
        std::fs::write(path, json)
            .map_err(|e| format!("cannot write '{}': {e}", path.display()))?;
    }
    if let Some(path) = &args.chart {
        let svg = chart::svg(&workloads, &results, &limits);
        std::fs::write(path, svg).map_err(|e| format!("cannot write '{}': {e}", path.display()))?;
    }
    Ok(())
}

/// The settings a JSON file records.
fn settings(
    args: &BenchArgs,
    modes: &[Mode],
    threads: &[usize],
    tuning_cache: Option<&str>,
) -> report::Settings {
    report::Settings {
        time_per_mode_s: args.time,
        threads: threads.to_vec(),
        modes: modes.iter().map(Mode::label).collect(),
        model: args.model.as_ref().map(|p| p.display().to_string()),
        tuning_cache: tuning_cache.map(str::to_string),
    }
}

/// The workloads the arguments ask for.
fn chosen_workloads(args: &BenchArgs) -> Result<Vec<Workload>, Failure> {
    if let Some(path) = args.model.as_deref().filter(|p| is_onnx(p)) {
        let imported = import_onnx(
            path,
            &args.input_shapes,
            &side_file_for(path),
            "tessera-bench",
        )
        .map_err(Failure::Diagnostics)?;
        return Ok(vec![Workload {
            title: format!("{} (ONNX model)", path.display()),
            entry: args.entry.clone().unwrap_or_default(),
            path: format!("{} (imported)", path.display()),
            source: imported.text,
            id: path
                .file_stem()
                .and_then(|s| s.to_str())
                .unwrap_or("model")
                .to_string(),
            bound: Bound::Compute,
            weights: Some(std::sync::Arc::new(imported.weights)),
        }]);
    }
    if !args.input_shapes.is_empty() {
        return Err("--input-shape applies to ONNX models".to_string().into());
    }
    if let Some(path) = &args.model {
        let name = path.display().to_string();
        let bytes = std::fs::read(path).map_err(|e| format!("cannot read '{name}': {e}"))?;
        let (file, decode_error) = decode(&name, &bytes);
        if let Some(diag) = decode_error {
            return Err(Failure::Diagnostics(diag.render(&file)));
        }
        let source = file.text().to_string();
        let id = path
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or("model")
            .to_string();
        return Ok(vec![Workload {
            title: format!("{} (user model)", path.display()),
            entry: args.entry.clone().unwrap_or_default(),
            path: path.display().to_string(),
            source,
            id,
            bound: Bound::Compute,
            weights: None,
        }]);
    }
    if args.entry.is_some() {
        return Err("--entry needs a MODEL".to_string().into());
    }
    let ids: Vec<&str> = if args.workload.is_empty() {
        BUILTIN_IDS.to_vec()
    } else {
        args.workload.iter().map(|s| s.trim()).collect()
    };
    ids.iter()
        .filter(|id| **id != compile_scaling::ID)
        .map(|id| {
            workloads::builtin(id).ok_or_else(|| {
                Failure::Message(format!(
                    "unknown workload '{id}' (workloads: {}, {}, {})",
                    BUILTIN_IDS.join(", "),
                    EXTRA_IDS.join(", "),
                    compile_scaling::ID
                ))
            })
        })
        .collect()
}

/// A mode on `threads` threads, as tables and progress show it.
fn run_label(mode: Mode, threads: usize) -> String {
    match threads {
        1 => mode.label(),
        n => format!("{}, {n} threads", mode.label()),
    }
}

/// The modes the arguments ask for, in the order -O0.., then --no-fusion; all three by default.
fn chosen_modes(args: &BenchArgs) -> Vec<Mode> {
    let mut modes: Vec<Mode> = args
        .opt_levels
        .iter()
        .map(|&level| Mode {
            level,
            fusion: true,
        })
        .collect();
    if args.no_fusion {
        modes.push(Mode {
            level: 3,
            fusion: false,
        });
    }
    if modes.is_empty() {
        modes = vec![
            Mode {
                level: 0,
                fusion: true,
            },
            Mode {
                level: 3,
                fusion: false,
            },
            Mode {
                level: 3,
                fusion: true,
            },
        ];
    }
    modes.dedup();
    modes
}

/// `--tune`: each workload tuned on each thread count (`tessera-tune`, `--tune-budget` each)
/// into the tuning cache, a line of what it found on `err`. A built-in workload is tuned from
/// its text written to a scratch file; a user model from its file.
fn tune_workloads(
    args: &BenchArgs,
    workloads: &[Workload],
    threads: &[usize],
    err: &mut dyn Write,
) -> Result<(), Failure> {
    let budget = crate::tune::parse_budget(&args.tune_budget)?;
    let cache = tessera::mlir::cpu::tuning::cache::cache_path(args.tuning_cache.as_deref())
        .ok_or_else(|| {
            "--tune needs a tuning cache to write: name one with --tuning-cache FILE".to_string()
        })?;
    let scratch = std::env::temp_dir().join(format!("tessera-bench-tune-{}", std::process::id()));
    std::fs::create_dir_all(&scratch)
        .map_err(|e| format!("cannot make {}: {e}", scratch.display()))?;
    let tuned = (|| -> Result<(), Failure> {
        for workload in workloads {
            let model = match &args.model {
                Some(path) => path.clone(),
                None => {
                    let path = scratch.join(format!("{}.tsr", workload.id));
                    std::fs::write(&path, &workload.source)
                        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
                    path
                }
            };
            for &n in threads {
                let request = crate::tune::Request {
                    model: model.clone(),
                    input_shapes: args.input_shapes.clone(),
                    entry: Some(workload.entry.clone()),
                    threads: n as u32,
                    budget,
                    cache: cache.clone(),
                };
                let outcome = crate::tune::tune(&request, err)
                    .map_err(|e| format!("tuning {}: {e}", workload.id))?;
                let _ = writeln!(
                    err,
                    "tuned {} on {n} thread(s): {:.4} -> {:.4} ms, {} kernel(s) changed",
                    workload.id,
                    outcome.strategy_ms,
                    outcome.tuned_ms,
                    outcome
                        .tuned
                        .iter()
                        .filter(|t| !t.changes.is_empty())
                        .count()
                );
            }
        }
        Ok(())
    })();
    let _ = std::fs::remove_dir_all(&scratch);
    tuned
}

/// Compiles and times one workload in one mode, with the tuning cache at `tuning_cache` if
/// any; with `save`, writes its inputs and the outputs of its first call there as `.npy`.
fn measure_workload(
    workload: &Workload,
    mode: Mode,
    threads: usize,
    time: Duration,
    save: Option<&Path>,
    tuning_cache: Option<&str>,
) -> Result<Measurement, Failure> {
    let (file, module) = workload.load();
    let module = module.map_err(|d| Failure::Diagnostics(render_all(&d, &file)))?;
    let entry = entry_index(workload, &module)?;
    let func = &module.funcs[entry];
    let flops = decompose(&module)
        .map_err(|e| format!("{}: {e}", workload.path))?
        .flops(entry);
    let mut pipeline = Pipeline::preset(mode.level, mode.fusion).with_threads(threads);
    if let Some(path) = tuning_cache {
        pipeline.set_tuning_cache(path, None, None);
    }
    let kernels = {
        let context = MlirContext::new();
        let env = StageEnv {
            context: &context,
            file: &file,
        };
        let reports = report_of_pipeline(
            Program::Graph(module.clone()),
            &pipeline,
            &env,
            &mut std::io::sink(),
        )
        .map_err(|d| Failure::Diagnostics(render_all(&d, &file)))?;
        reports
            .iter()
            .find(|r| r.name == func.name)
            .map_or(0, |r| r.kernels.len())
    };
    let context = MlirContext::new();
    let (jit, times) = compile(
        &context,
        &module,
        &file,
        &pipeline,
        jit_options(&module, &pipeline),
    )
    .map_err(|d| Failure::Diagnostics(render_all(&d, &file)))?;
    let tensors = random_inputs(func);
    let inputs = tensors
        .iter()
        .map(|t| {
            HostBuffer::from_tensor(t)
                .ok_or_else(|| format!("cannot allocate an input of type {}", t.ty))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let mut outputs = jit.output_buffers(&func.name).map_err(|e| e.to_string())?;
    let bytes = inputs
        .iter()
        .chain(&outputs)
        .map(|b| {
            let ty = b.ty();
            ty.num_elements().unwrap_or(0) * element_bytes(ty.element) as u64
        })
        .sum();
    let call = |outputs: &mut [HostBuffer]| {
        jit.call_buffers(&func.name, &inputs, outputs)
            .map_err(|e| e.to_string())
    };
    alloc_counter::reset_peak();
    let before = alloc_counter::stats();
    let start = Instant::now();
    call(&mut outputs)?;
    let first_call = start.elapsed();
    let peak_bytes = alloc_counter::stats()
        .peak_bytes
        .saturating_sub(before.live_bytes);
    if let Some(dir) = save {
        let results: Vec<Tensor> = outputs.iter().map(HostBuffer::to_tensor).collect();
        save_tensors(dir, &tensors, &results)?;
    }
    let latency = time_calls(
        Budget {
            time,
            min_runs: 3,
            max_runs: 100_000,
        },
        || call(&mut outputs),
    )?;
    Ok(Measurement {
        workload: workload.id.clone(),
        mode,
        threads,
        compile: times.steps,
        first_call,
        latency,
        flops,
        bytes,
        peak_bytes,
        kernels,
        bound: workload.bound,
    })
}

/// Random inputs for `func`'s parameters, from a fixed seed per position (the same in every
/// mode and on every target).
pub fn random_inputs(func: &tessera::ir::Func) -> Vec<Tensor> {
    func.params
        .iter()
        .enumerate()
        .map(|(position, &p)| random_tensor(&func.value(p).ty, position as u64))
        .collect()
}

/// The index of `workload`'s timed function in `module`: the one named, or the only one.
pub fn entry_index(workload: &Workload, module: &tessera::ir::Module) -> Result<usize, Failure> {
    Ok(match workload.entry.as_str() {
        "" if module.funcs.len() == 1 => 0,
        "" => {
            return Err(Failure::Message(format!(
                "{} has {} functions: choose one with --entry",
                workload.path,
                module.funcs.len()
            )))
        }
        name => module
            .funcs
            .iter()
            .position(|f| f.name == name.trim_start_matches('@'))
            .ok_or_else(|| format!("no function '@{name}' in {}", workload.path))?,
    })
}

/// Writes `inputs` and `outputs` as `dir/in<i>.npy` and `dir/out<i>.npy`.
pub fn save_tensors(dir: &Path, inputs: &[Tensor], outputs: &[Tensor]) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create '{}': {e}", dir.display()))?;
    let named = inputs
        .iter()
        .enumerate()
        .map(|(i, t)| (format!("in{i}.npy"), t))
        .chain(
            outputs
                .iter()
                .enumerate()
                .map(|(i, t)| (format!("out{i}.npy"), t)),
        );
    for (name, tensor) in named {
        let path = dir.join(name);
        let bytes = write_npy(tensor).map_err(|e| format!("{}: {e}", path.display()))?;
        std::fs::write(&path, bytes)
            .map_err(|e| format!("cannot write '{}': {e}", path.display()))?;
    }
    Ok(())
}
