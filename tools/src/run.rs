//! `tessera-run`: compiles a model for the CPU or the GPU (`--target=cuda`), runs it on real
//! data (`.npy`) or deterministic random inputs, prints a summary of every output, and
//! optionally compares with the reference interpreter, times repeated calls and reports
//! compile stages and memory.

use crate::model::{load_model, Model, StringBoundary};
use crate::opt::TargetArg;
use crate::profile::profile_report;
use clap::Parser;
use std::fmt::Write as _;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};
use tessera::crash::Activity;
use tessera::diag::render_all;
use tessera::exec::compare::{compare, Tolerance};
use tessera::exec::interpret::{interpret, MAX_ELEMENTS};
use tessera::exec::npy::{read_npy_expecting, read_npy_strings, write_npy, write_npy_strings};
use tessera::exec::random::random_tensor;
use tessera::exec::sensitivity::sensitivity;
use tessera::exec::tensor::{Tensor, TensorData};
use tessera::ir::Module;
use tessera::mlir::cpu::compile::{compile, jit_options};
use tessera::mlir::cpu::runtime::alloc_counter;
use tessera::mlir::cpu::runtime::jit::Jit;
use tessera::mlir::cpu::runtime::jit::PartKind;
use tessera::mlir::cpu::runtime::kernel_profile;
use tessera::mlir::cpu::runtime::memref::HostBuffer;
use tessera::mlir::gpu::runtime::executable::GpuExecutable;
use tessera::mlir::pipeline::runner::StepTime;
use tessera::mlir::pipeline::Pipeline;
use tessera::mlir::MlirContext;
use tessera::transforms::weights_as_params::weights_as_params;
use tessera_onnx::StringTable;

/// Command-line options of `tessera-run`.
#[derive(Parser, Debug)]
#[command(
    name = "tessera-run",
    version,
    about = "Compile a tessera model for the CPU or an NVIDIA GPU and run it on .npy or random inputs.",
    after_help = "\
SPEC is a .npy file (f32, f64, i32, i64 or bool, C order) or random[:SEED]: uniform in
[-1, 1) for floats, small integers for integers, deterministic (each argument draws its own
stream from SEED). Arguments not given are random:0.

Exit status: 0 on success (and, with --compare-reference, agreement), 1 on any error in the
model, the inputs or the run, 2 for usage errors, 3 when the compiler or the compiled code
crashed (the step, the input and the saved reproducer are printed), 4 when compiled code
could not allocate a temporary.

With --target=cuda the model runs on GPU 0 through the CUDA driver, loaded at run time: a
machine without one says so (exit 1). Steady calls are timed on the host, copies included.

Examples:
  tessera-run testdata/models/seed_mlp.tsr --compare-reference --repeat 100
  tessera-run testdata/models/seed_mlp.tsr --target=cuda --compare-reference --repeat 100
  tessera-run model.tsr --entry mlp --input x=x.npy --input w1=random:1 --output-dir out/
  tessera-run model.tsr --stats"
)]
pub struct RunArgs {
    /// The model (.tsr, or .onnx imported on the fly).
    pub model: PathBuf,
    /// For an ONNX model: fix an input's symbolic dimensions, NAME=1x3x224x224 (unknown ones
    /// default to 1); a sequence input's elements, NAME=[2x3,5]; an empty optional, NAME=none.
    #[arg(long = "input-shape", value_name = "NAME=SHAPE")]
    pub input_shapes: Vec<String>,
    /// The function to run; may be omitted when the module has one function.
    #[arg(long)]
    pub entry: Option<String>,
    /// An argument: NAME=SPEC, NAME without `%`.
    #[arg(long = "input", value_name = "NAME=SPEC")]
    pub inputs: Vec<String>,
    /// Write the outputs as DIR/out0.npy, DIR/out1.npy, ... in return order.
    #[arg(long, value_name = "DIR")]
    pub output_dir: Option<PathBuf>,
    /// The preset pipeline: -O0 (op by op, every intermediate materialized) to -O3 (fused,
    /// tiled, vectorized); see `tessera-opt --help`.
    #[arg(short = 'O', value_name = "LEVEL", default_value_t = 3, value_parser = clap::value_parser!(u8).range(0..=3))]
    pub opt_level: u8,
    /// Leave out fusion: the same kernels, unfused (fusion's own effect shows against it).
    #[arg(long)]
    pub no_fusion: bool,
    /// Where the model runs: cpu (this machine, JIT-compiled) or cuda (GPU 0, PTX).
    #[arg(long, value_enum, default_value = "cpu")]
    pub target: TargetArg,
    /// Run the outer loops of big kernels on N threads (the caller and N - 1 workers).
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub threads: u32,
    /// Make the weights kept in a side file (`external<...>` constants) parameters, given
    /// their stored values unless `--input` names them: the compiled code then takes its
    /// weights at each call instead of having them folded in.
    #[arg(long)]
    pub weights_as_params: bool,
    /// Also run the reference interpreter and compare every output (PASS/FAIL).
    #[arg(long)]
    pub compare_reference: bool,
    /// The tuning cache whose choices the CPU compile uses (default: the file
    /// TESSERA_TUNING_CACHE names, else ~/.cache/tessera/tuning.json; tessera-tune writes it).
    #[arg(long, value_name = "FILE")]
    pub tuning_cache: Option<PathBuf>,
    /// Time this many calls after a warm-up and print the median, p10 and p90.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub repeat: usize,
    /// Print compile time per stage and the peak bytes allocated by the compiled code.
    #[arg(long)]
    pub stats: bool,
    /// Time every kernel (each top-level loop nest of the CPU code, with the fills and copies
    /// that prepare its operands) over the --repeat calls (10 when --repeat is not given) and
    /// print where a call's time goes, the slowest kernel first, each named by the values it
    /// computes and their place in the model. The marks cost well under a microsecond each.
    #[arg(long)]
    pub profile: bool,
    /// Verify the IR after every pass of every stage, as debug builds do (release builds
    /// verify what enters and leaves the pipeline, and trust tessera's stages in between;
    /// the fuzzers ask for this)
    #[arg(long)]
    pub verify_each: bool,
}

/// Runs `tessera-run`, printing results to `out` and errors to `err`.
pub fn run(args: &RunArgs, out: &mut dyn Write, err: &mut dyn Write) -> ExitCode {
    if args.target == TargetArg::Cuda && args.threads > 1 {
        let _ = writeln!(
            err,
            "tessera-run: error: --threads does not apply to --target=cuda"
        );
        return ExitCode::from(2);
    }
    if args.target == TargetArg::Cuda && args.profile {
        let _ = writeln!(
            err,
            "tessera-run: error: --profile times the CPU's kernels; it does not apply to --target=cuda"
        );
        return ExitCode::from(2);
    }
    match run_inner(args, out) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(message) => {
            let _ = write!(err, "{message}");
            if !message.ends_with('\n') {
                let _ = writeln!(err);
            }
            ExitCode::FAILURE
        }
    }
}

/// How many times the reference's own movement under one-ulp input changes a difference may
/// be and still pass: compiled code rounds about as often as the reference, in other places.
const SENSITIVITY_MARGIN: f64 = 2.0;

/// The calls `--profile` times when `--repeat` does not say.
const PROFILED_CALLS: usize = 10;

/// The run; `Ok(false)` when the comparison with the reference failed.
fn run_inner(args: &RunArgs, out: &mut dyn Write) -> Result<bool, String> {
    let path = args.model.display().to_string();
    let Model {
        file,
        module,
        aliases,
        notes,
        mut strings,
        output_labels,
    } = load_model(&args.model, &args.input_shapes, "tessera-run")?;
    for note in &notes {
        let _ = writeln!(out, "note: {note}");
    }
    let (module, weights) = if args.weights_as_params {
        weights_as_params(&module)
    } else {
        let none = vec![Vec::new(); module.funcs.len()];
        (module, none)
    };
    let entry = entry_function(&module, args.entry.as_deref())?;
    check_sizes(&module)?;
    let func = &module.funcs[entry];
    let inputs = prepare_inputs(
        &module,
        entry,
        &args.inputs,
        &aliases,
        &weights[entry],
        &mut strings,
    )?;

    let context = MlirContext::new();
    if args.verify_each {
        context.set_verify_each(true);
    }
    let target = args.target.target();
    let mut pipeline = Pipeline::preset_for(target, args.opt_level, !args.no_fusion, None)
        .with_threads(args.threads as usize);
    crate::tuning_cache::apply(
        &mut pipeline,
        args.tuning_cache.as_deref(),
        None,
        None,
        &mut std::io::stderr(),
    );
    let pipeline = if args.profile {
        pipeline.with_kernel_profile()
    } else {
        pipeline
    };
    let (mut compiled, steps) = Compiled::new(&context, &module, &file, &pipeline, &inputs)?;
    // Compiled code that crashes is miscompiled: say so, naming the function.
    let _running = Activity::enter(&format!("the compiled @{}", func.name), &path, None);
    alloc_counter::reset_peak();
    let before = alloc_counter::stats();
    let start = Instant::now();
    let results = compiled.call(&func.name, &inputs)?;
    let first_call = start.elapsed();
    let after = alloc_counter::stats();
    let compile_time: Duration = steps.iter().map(|s| s.time).sum();

    let mut report = String::new();
    let _ = writeln!(
        report,
        "@{} on {} input(s), -O{}{}",
        func.name,
        inputs.len(),
        args.opt_level,
        match (&compiled, target) {
            (Compiled::Gpu(executable), _) => match executable.describe() {
                Ok((name, chip, driver)) => format!(", on {name} ({chip}, driver {driver})"),
                Err(_) => ", on the GPU".to_string(),
            },
            (Compiled::Cpu { jit, .. }, _) if jit.threads() > 1 => {
                format!(", {} threads", jit.threads())
            }
            _ => String::new(),
        }
    );
    for (i, tensor) in results.iter().enumerate() {
        let shown = match string_result(&strings, i, tensor)? {
            Some(texts) => format!("strings of shape {:?} {texts:?}", tensor.ty.shape),
            None => summary(tensor),
        };
        match output_labels.get(i) {
            Some(label) => writeln!(report, "output {i} ({label}): {shown}"),
            None => writeln!(report, "output {i}: {shown}"),
        }
        .ok();
    }
    let mut agree = true;
    if args.compare_reference {
        let start = Instant::now();
        let reference = interpret(&module, entry, &inputs)
            .map_err(|e| format!("tessera-run: error: reference interpreter: {e}"))?;
        let reference_time = start.elapsed();
        let mut noise_floor: Option<Option<Vec<f64>>> = None;
        for (i, (got, want)) in results.iter().zip(&reference).enumerate() {
            let tolerance = Tolerance::for_function(&module, entry);
            let c = compare(got, want, tolerance);
            let mut verdict = if c.pass { "PASS" } else { "FAIL" }.to_string();
            if !c.pass && got.ty == want.ty {
                // A difference the model itself makes of one rounding is no miscompilation.
                let floor = noise_floor
                    .get_or_insert_with(|| sensitivity(&module, entry, &inputs, &reference))
                    .as_ref()
                    .map(|changes| changes[i]);
                verdict = match floor {
                    Some(change) if c.max_abs <= SENSITIVITY_MARGIN * change => format!(
                        "PASS within the model's sensitivity (inputs and op results moved by one ulp move the reference by up to {change:.3e})"
                    ),
                    Some(change) => format!(
                        "FAIL (more than {SENSITIVITY_MARGIN}x the model's sensitivity: inputs and op results moved by one ulp move the reference by up to {change:.3e})"
                    ),
                    None => verdict,
                };
            }
            agree &= verdict.starts_with("PASS");
            let _ = writeln!(
                report,
                "reference {i}: max abs error {:.3e}, max rel error {:.3e} ({tolerance}): {verdict}",
                c.max_abs,
                c.max_rel,
            );
        }
        let _ = writeln!(report, "reference interpreter: {}", ms(reference_time));
    }
    let _ = writeln!(report, "compile: {}", ms(compile_time));
    let _ = writeln!(report, "first call: {}", ms(first_call));
    let repeat = match (args.repeat, args.profile) {
        (0, true) => PROFILED_CALLS,
        (repeat, _) => repeat,
    };
    kernel_profile::reset();
    if repeat > 0 {
        let mut samples = Vec::with_capacity(repeat);
        for _ in 0..repeat {
            let start = Instant::now();
            compiled.call_again(&func.name, &inputs)?;
            samples.push(start.elapsed());
        }
        samples.sort();
        let pick = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
        let _ = writeln!(
            report,
            "steady call ({} runs): median {}, p10 {}, p90 {}",
            samples.len(),
            ms(pick(0.5)),
            ms(pick(0.1)),
            ms(pick(0.9))
        );
    }
    if let (true, Compiled::Cpu { jit, .. }) = (args.profile, &compiled) {
        let kernels = kernel_profile::take();
        report.push_str(&profile_report(&kernels, jit.kernel_labels(), repeat));
    }
    if args.stats {
        for step in &steps {
            let _ = writeln!(report, "  stage {}: {}", step.name, ms(step.time));
        }
    }
    if let (true, Compiled::Cpu { jit, .. }) = (args.stats, &compiled) {
        let parts: Vec<String> = jit
            .parts()
            .iter()
            .map(|part| {
                let kind = match part.kind() {
                    PartKind::Glue => "glue".to_string(),
                    PartKind::ShortLoops => format!("-O{} short-loops", part.level),
                    PartKind::Long | PartKind::Tiny => format!("-O{}", part.level),
                };
                format!(
                    "{kind} {} function(s), {} instruction(s), {:.1} ms on thread {}, {} constant byte(s)",
                    part.functions,
                    part.instructions,
                    part.milliseconds,
                    part.thread,
                    part.constant_bytes
                )
            })
            .collect();
        let _ = writeln!(report, "llvm parts: {}", parts.join("; "));
        let _ = writeln!(
            report,
            "compiled code allocated: peak {} bytes in {} allocation(s), {} bytes left unfreed",
            after.peak_bytes.saturating_sub(before.live_bytes),
            after.allocations,
            after.live_bytes.saturating_sub(before.live_bytes)
        );
    }
    if let Some(dir) = &args.output_dir {
        write_outputs(dir, &results, &strings)?;
        let _ = writeln!(report, "outputs written to {}", dir.display());
    }
    out.write_all(report.as_bytes())
        .map_err(|e| format!("tessera-run: error: cannot write the report: {e}"))?;
    Ok(agree)
}

/// The entry function compiled for its target, ready to call.
enum Compiled {
    /// On the CPU: the JIT, and the host buffers of the inputs and outputs.
    Cpu {
        jit: Jit,
        inputs: Vec<HostBuffer>,
        outputs: Vec<HostBuffer>,
    },
    /// On the GPU.
    Gpu(GpuExecutable),
}

impl Compiled {
    /// `module` compiled by `pipeline` for its target, with the time of every step, ready to
    /// be called on `inputs`.
    fn new(
        context: &MlirContext,
        module: &Module,
        file: &tessera::source::SourceFile,
        pipeline: &Pipeline,
        inputs: &[Tensor],
    ) -> Result<(Compiled, Vec<StepTime>), String> {
        if pipeline.has_stage("tessera-lower-to-nvvm") {
            let (plan, steps) =
                tessera::mlir::gpu::compile::compile(context, module, file, pipeline)
                    .map_err(|d| render_all(&d, file))?;
            let signatures = tessera::exec::signature::Signature::of_module(module);
            let executable = GpuExecutable::load(plan, signatures)
                .map_err(|e| format!("tessera-run: error: {e}"))?;
            return Ok((Compiled::Gpu(executable), steps));
        }
        let (jit, times) = compile(
            context,
            module,
            file,
            pipeline,
            jit_options(module, pipeline),
        )
        .map_err(|d| render_all(&d, file))?;
        let inputs = inputs
            .iter()
            .map(|t| {
                HostBuffer::from_tensor(t).ok_or_else(|| {
                    format!("tessera-run: error: cannot allocate input of type {}", t.ty)
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok((
            Compiled::Cpu {
                jit,
                inputs,
                outputs: Vec::new(),
            },
            times.steps,
        ))
    }

    /// Calls function `name` on `inputs` and returns its results.
    fn call(&mut self, name: &str, inputs: &[Tensor]) -> Result<Vec<Tensor>, String> {
        if let Compiled::Gpu(executable) = self {
            return executable
                .call(name, inputs)
                .map_err(|e| format!("tessera-run: error: {e}"));
        }
        self.call_again(name, inputs)?;
        match self {
            Compiled::Cpu { outputs, .. } => {
                Ok(outputs.iter().map(HostBuffer::to_tensor).collect())
            }
            Compiled::Gpu(_) => Ok(Vec::new()),
        }
    }

    /// Calls function `name` on `inputs` once more, keeping the results where they are (the
    /// CPU's output buffers; on the GPU, a whole call with its copies).
    fn call_again(&mut self, name: &str, inputs: &[Tensor]) -> Result<(), String> {
        let error = |e: &dyn std::fmt::Display| format!("tessera-run: error: {e}");
        match self {
            Compiled::Cpu {
                jit,
                inputs: buffers,
                outputs,
            } => {
                if outputs.is_empty() {
                    *outputs = jit.output_buffers(name).map_err(|e| error(&e))?;
                }
                jit.call_buffers(name, buffers, outputs)
                    .map_err(|e| error(&e))
            }
            Compiled::Gpu(executable) => executable
                .call(name, inputs)
                .map(drop)
                .map_err(|e| error(&e)),
        }
    }
}

/// Refuses models with a tensor larger than a host tensor may be: compiled code cannot
/// recover from a failed allocation, so the check comes before anything runs.
pub(crate) fn check_sizes(module: &Module) -> Result<(), String> {
    for func in &module.funcs {
        for value in &func.values {
            if value.ty.num_elements().is_none_or(|n| n > MAX_ELEMENTS) {
                return Err(format!(
                    "tessera-run: error: '%{}' in '@{}' is a {}, more than the {MAX_ELEMENTS} elements a tensor may have here",
                    value.name, func.name, value.ty
                ));
            }
        }
    }
    Ok(())
}

/// The function to run: the one named, or the only one.
pub(crate) fn entry_function(module: &Module, entry: Option<&str>) -> Result<usize, String> {
    let names = || {
        module
            .funcs
            .iter()
            .map(|f| format!("@{}", f.name))
            .collect::<Vec<_>>()
            .join(", ")
    };
    match entry {
        Some(name) => {
            let name = name.trim_start_matches('@');
            module.funcs.iter().position(|f| f.name == name).ok_or_else(|| {
                format!("tessera-run: error: no function '@{name}' in the model (functions: {})", names())
            })
        }
        None if module.funcs.len() == 1 => Ok(0),
        None => Err(format!(
            "tessera-run: error: the model has {} functions; choose one with --entry (functions: {})",
            module.funcs.len(),
            names()
        )),
    }
}

/// The inputs of function `entry`: from `--input NAME=SPEC` (NAME a parameter, or an
/// imported graph's input name in `aliases`), else the last parameters' `weights` (the
/// side-file constants `--weights-as-params` made parameters), `random:0` for the others.
pub(crate) fn prepare_inputs(
    module: &Module,
    entry: usize,
    specs: &[String],
    aliases: &[(String, String)],
    weights: &[Tensor],
    strings: &mut StringBoundary,
) -> Result<Vec<Tensor>, String> {
    let func = &module.funcs[entry];
    let params: Vec<(&str, &tessera::types::TensorType)> = func
        .params
        .iter()
        .map(|&p| (func.value(p).name.as_str(), &func.value(p).ty))
        .collect();
    let mut given: Vec<Option<&str>> = vec![None; params.len()];
    for spec in specs {
        let (name, source) = spec
            .split_once('=')
            .ok_or_else(|| format!("tessera-run: error: --input '{spec}' is not NAME=SPEC"))?;
        let name = aliases
            .iter()
            .find(|(onnx, _)| onnx == name)
            .map_or(name.trim_start_matches('%'), |(_, param)| param.as_str());
        let index = params.iter().position(|(p, _)| *p == name).ok_or_else(|| {
            let list: Vec<String> = params.iter().map(|(p, t)| format!("{p}: {t}")).collect();
            format!(
                "tessera-run: error: '@{}' has no argument '{name}' (arguments: {})",
                func.name,
                list.join(", ")
            )
        })?;
        if given[index].replace(source).is_some() {
            return Err(format!(
                "tessera-run: error: argument '{name}' is given twice"
            ));
        }
    }
    params
        .iter()
        .zip(given)
        .enumerate()
        .map(|(position, ((name, ty), source))| {
            let weight = (position + weights.len())
                .checked_sub(params.len())
                .map(|w| &weights[w]);
            match (source, weight) {
                (None, Some(weight)) => Ok(weight.clone()),
                (source, _) if strings.params.iter().any(|p| p == name) => {
                    string_input(name, ty, source, &mut strings.table)
                }
                (source, _) => input(name, ty, position, source.unwrap_or("random:0")),
            }
        })
        .collect()
}

/// One input from its SPEC, checked against the parameter's type.
fn input(
    name: &str,
    ty: &tessera::types::TensorType,
    position: usize,
    spec: &str,
) -> Result<Tensor, String> {
    if let Some(seed) = spec.strip_prefix("random") {
        let seed = match seed.strip_prefix(':') {
            Some(number) => number
                .parse::<u64>()
                .map_err(|_| format!("tessera-run: error: argument '{name}': '{spec}' is not random[:SEED] with an integer SEED"))?,
            None if seed.is_empty() => 0,
            None => return Err(format!("tessera-run: error: argument '{name}': '{spec}' is not random[:SEED]")),
        };
        let stream = seed
            .wrapping_mul(0x9E37_79B9_7F4A_7C15)
            .wrapping_add(position as u64);
        return Ok(random_tensor(ty, stream));
    }
    let bytes = std::fs::read(spec)
        .map_err(|e| format!("tessera-run: error: argument '{name}': cannot read '{spec}': {e}"))?;
    let tensor = read_npy_expecting(&bytes, Some(ty.element))
        .map_err(|e| format!("tessera-run: error: argument '{name}': '{spec}': {e}"))?;
    if &tensor.ty != ty {
        return Err(format!(
            "tessera-run: error: argument '{name}' has type {ty}, but '{spec}' holds {}",
            tensor.ty
        ));
    }
    Ok(tensor)
}

/// Result `i` read back as strings, when it holds the ids of strings.
fn string_result(
    strings: &StringBoundary,
    i: usize,
    tensor: &Tensor,
) -> Result<Option<Vec<String>>, String> {
    if !strings.results.get(i).copied().unwrap_or(false) {
        return Ok(None);
    }
    strings
        .table
        .strings(tensor)
        .map(Some)
        .map_err(|e| format!("tessera-run: error: output {i} of strings: {e}"))
}

/// The input of a parameter that takes strings (`ty`: their ids) from the `.npy` file of
/// strings `spec` names, interned into `table`.
fn string_input(
    name: &str,
    ty: &tessera::types::TensorType,
    spec: Option<&str>,
    table: &mut StringTable,
) -> Result<Tensor, String> {
    let spec = match spec {
        Some(spec) if !spec.starts_with("random") => spec,
        _ => {
            return Err(format!(
                "tessera-run: error: argument '{name}' takes strings: give it a .npy file of \
                 strings with --input {name}=FILE.npy"
            ))
        }
    };
    let bytes = std::fs::read(spec)
        .map_err(|e| format!("tessera-run: error: argument '{name}': cannot read '{spec}': {e}"))?;
    let (shape, texts) = read_npy_strings(&bytes)
        .map_err(|e| format!("tessera-run: error: argument '{name}': '{spec}': {e}"))?;
    if shape != ty.shape {
        return Err(format!(
            "tessera-run: error: argument '{name}' takes strings of shape {:?}, but '{spec}' \
             holds {shape:?}",
            ty.shape
        ));
    }
    Ok(table.ids(shape, &texts))
}

fn write_outputs(dir: &Path, results: &[Tensor], strings: &StringBoundary) -> Result<(), String> {
    std::fs::create_dir_all(dir)
        .map_err(|e| format!("tessera-run: error: cannot create '{}': {e}", dir.display()))?;
    for (i, tensor) in results.iter().enumerate() {
        let path = dir.join(format!("out{i}.npy"));
        let bytes = match string_result(strings, i, tensor)? {
            Some(texts) => write_npy_strings(&tensor.ty.shape, &texts),
            None => {
                write_npy(tensor).map_err(|e| format!("tessera-run: error: output {i}: {e}"))?
            }
        };
        std::fs::write(&path, bytes)
            .map_err(|e| format!("tessera-run: error: cannot write '{}': {e}", path.display()))?;
    }
    Ok(())
}

/// `tensor<2x3xf32> [0.1, -0.5, ...] checksum 1.25e0`; integers are printed exactly.
fn summary(tensor: &Tensor) -> String {
    let shown: Vec<String> = (0..tensor.len().min(6))
        .map(|i| match &tensor.data {
            TensorData::Int(v) => tensor.ty.element.int_value(v[i]).to_string(),
            _ => tensor.get_f64(i).to_string(),
        })
        .collect();
    let more = if tensor.len() > 6 { ", ..." } else { "" };
    let checksum = (0..tensor.len())
        .map(|i| tensor.get_f64(i))
        .fold(0.0, |a, b| a + b);
    format!(
        "{} [{}{more}] checksum {checksum:.6e}",
        tensor.ty,
        shown.join(", ")
    )
}

/// A duration in milliseconds, as tessera-run prints every time: three decimals, more below
/// a millisecond so that four digits show (0.01234 ms), which `tessera-tune` compares.
pub(crate) fn ms(d: Duration) -> String {
    let ms = d.as_secs_f64() * 1e3;
    let decimals = if ms > 0.0 {
        (3 - ms.log10().floor() as i64).clamp(3, 6) as usize
    } else {
        3
    };
    format!("{ms:.decimals$} ms")
}
