//! `tessera-opt`: reads tessera IR (or MLIR), reports every error with its location, runs a
//! pipeline of tessera stages and upstream passes (a preset or `--pass-pipeline`) with
//! instrumentation, and prints the result; `--split-input-file` and `--verify-diagnostics`
//! work as in `mlir-opt`.

use crate::model::load_model;
use crate::registry;
use clap::Parser;
use melior::ir::operation::OperationPrintingFlags;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use tessera::crash::Activity;
use tessera::diag::{render_all, Diagnostic};
use tessera::exec::signature::Signature;
use tessera::expected_diagnostics::check_expected;
use tessera::frontend::{decode, load, split_chunks, SPLIT_MARKER};
use tessera::ir::Module;
use tessera::mlir::cpu::compile::jit_options;
use tessera::mlir::cpu::cpu_model::CpuModel;
use tessera::mlir::cpu::llvm::llvm_ir;
use tessera::mlir::cpu::runtime::jit::{write_object_file, LlvmOptions};
use tessera::mlir::gpu::ptx::kernel_ptx;
use tessera::mlir::gpu::GPU_CHIPS;
use tessera::mlir::pipeline::fusion_report::{report_json, report_of_pipeline, report_text};
use tessera::mlir::pipeline::runner::{
    run_pipeline, timing_report, Instrumentation, Selection, StepTime,
};
use tessera::mlir::pipeline::stages::{stages, table_names, OptionKind, Program, StageEnv};
use tessera::mlir::pipeline::{Pipeline, Target, UPSTREAM_PASSES};
use tessera::mlir::MlirContext;
use tessera::reference::render_reference;
use tessera::source::SourceFile;
use tessera::suggest::did_you_mean;
use tessera::transforms::weights_as_params::weights_as_params;

/// The text after `tessera-opt --help`'s options: the stages, the presets, the targets (with
/// the chips `--gpu-chip` takes), exit status and examples.
fn after_help() -> String {
    let chips: Vec<&str> = table_names(GPU_CHIPS).collect();
    AFTER_HELP.replace("@CHIPS@", &chips.join(", "))
}

/// [`after_help`]'s text, the chips left out.
const AFTER_HELP: &str = "\
Stages (tessera's own passes; --list-passes shows their options and every upstream pass):
  tessera-decompose          nn layers that are compositions become array ops (on the graph)
  tessera-convert-to-linalg  the graph becomes MLIR func/tensor/linalg/arith/math
  tessera-fuse               loop, input, epilogue, row and multi-output fusion
  tessera-tile               cache and register tiles (sizes from the strategy, or pinned)
  tessera-vectorize          register tiles become vector code; contractions become FMAs
  tessera-apply-schedule     a transform-dialect schedule from a file
  tessera-bufferize          buffers across functions; results as out-parameters; frees
  tessera-lower-to-llvm      the LLVM dialect for the host CPU (or cpu=, features=); f32
                             transcendentals as polynomials (math=libm: libm calls)
  tessera-map-to-gpu         (--target=cuda) a kernel per fusion group or standalone op,
                             tiled over blocks and threads, outlined into one gpu.module
  tessera-lower-to-nvvm      (--target=cuda) kernels to NVVM and PTX for chip= (sm_90)

Without -O or --pass-pipeline nothing is lowered: the model prints in canonical form, or
with --emit=mlir as the conversion leaves it. Presets (tessera stages, in order; on MLIR
input they start after the conversion):
  -O0  tessera-convert-to-linalg, tessera-bufferize, tessera-lower-to-llvm: op by op,
       every intermediate materialized (the standard-execution baseline)
  -O1  adds tessera-fuse (elementwise chains and producers of reductions in one loop nest)
  -O2  adds tessera-tile (tile sizes from the strategy, attached as tessera.tile_sizes)
  -O3  adds tessera-vectorize
  --no-fusion drops tessera-fuse from a preset; --schedule FILE replaces tiling and
  vectorization by a transform-dialect schedule; --threads N adds tessera-parallelize
  after tessera-bufferize. --list-passes shows every stage and pass.
  --target=cuda: the shared stages, then tessera-map-to-gpu and tessera-lower-to-nvvm;
  --emit=ptx writes the kernels' PTX; --gpu-chip picks the chip (default sm_90), one of
  @CHIPS@.

Exit status: 0 when the input is valid, 1 when it has errors (each reported as
FILE:LINE:COL: error: ... with the source line and a caret; errors in the pipeline at
<pass-pipeline>:1:COL), 2 for usage errors, 3 when the compiler crashed (the step, the
input and the saved reproducer are printed: a bug, not an input error).

Examples:
  tessera-opt testdata/models/seed_mlp.tsr          print the seed model canonically
  tessera-opt model.tsr --emit=mlir                 the model as MLIR linalg
  tessera-opt model.tsr -O3 --print-ir-after-all 2>stages.txt
  tessera-opt model.tsr --pass-pipeline='builtin.module(tessera-convert-to-linalg,tessera-tile{sizes=64,64,32},canonicalize)'
  tessera-opt model.tsr -O3 --dump-pass-pipeline    the preset as a reusable pipeline
  tessera-opt model.tsr -O3 --dump-dir stages/ --timing
  tessera-opt model.tsr -O3 --fusion-report         which ops became one kernel, and why not others
  tessera-opt model.tsr -O3 --target=cuda --gpu-chip=sm_80 --emit=ptx -o model.ptx
  tessera-opt kernel.mlir --pass-pipeline='builtin.module(tessera-fuse)'
  tessera-opt cases.tsr --split-input-file --verify-diagnostics
  tessera-opt --print-op-reference                  the reference of every op";

/// Command-line options of `tessera-opt`.
#[derive(Parser, Debug)]
#[command(
    name = "tessera-opt",
    version,
    about = "Read a tessera model (.tsr) or MLIR (.mlir), verify it, run a pipeline, print the result.",
    after_help = after_help()
)]
pub struct OptArgs {
    /// Input file (.tsr, .mlir, or .onnx imported on the fly); `-` or nothing reads
    /// standard input.
    pub input: Option<PathBuf>,
    /// For an ONNX model: fix an input's symbolic dimensions, NAME=1x3x224x224 (unknown ones
    /// default to 1); a sequence input's elements, NAME=[2x3,5]; an empty optional, NAME=none.
    #[arg(long = "input-shape", value_name = "NAME=SHAPE")]
    pub input_shapes: Vec<String>,
    /// Make the weights kept in a side file (`external<...>` constants) parameters of the
    /// functions no other calls, appended after their own: the compiler then does not fold
    /// or pre-pack them.
    #[arg(long)]
    pub weights_as_params: bool,
    /// Write the output here instead of standard output.
    #[arg(short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// How to read the input: `tsr`, or `mlir` (func/tensor/linalg IR); by default from the
    /// file's extension.
    #[arg(long, value_enum)]
    pub input_format: Option<InputFormat>,
    /// Process each chunk separated by a `// -----` line on its own; outputs are joined with
    /// the same separator.
    #[arg(long)]
    pub split_input_file: bool,
    /// Check diagnostics against `// expected-error @+N {{...}}` comments (also
    /// `expected-note`, `expected-warning`, `@-N`, `@above`, `@below`); succeed when every
    /// diagnostic was expected and every expectation met.
    #[arg(long)]
    pub verify_diagnostics: bool,
    /// Run the preset pipeline -O0, -O1, -O2 or -O3.
    #[arg(short = 'O', value_name = "LEVEL", value_parser = clap::value_parser!(u8).range(0..=3), conflicts_with = "pass_pipeline")]
    pub opt_level: Option<u8>,
    /// With -O: leave out tessera-fuse (the same kernels, unfused).
    #[arg(long)]
    pub no_fusion: bool,
    /// With -O: a transform-dialect schedule (`@__transform_main`) instead of tessera-tile
    /// and tessera-vectorize.
    #[arg(long, value_name = "FILE")]
    pub schedule: Option<PathBuf>,
    /// With -O: run the outer loops of big kernels on N threads (tessera-parallelize).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub threads: Option<u32>,
    /// What the preset compiles for: cpu (the host, through LLVM) or cuda (NVIDIA GPUs: PTX).
    #[arg(long, value_enum, default_value = "cpu")]
    pub target: TargetArg,
    /// The NVIDIA chip to compile kernels for with --target=cuda (default sm_90).
    #[arg(long, value_name = "CHIP")]
    pub gpu_chip: Option<String>,
    /// With -O: generate code for this CPU (an LLVM name such as haswell) instead of the host.
    #[arg(long, value_name = "CPU")]
    pub target_cpu: Option<String>,
    /// With -O: CPU features, LLVM style (+avx2,+fma), instead of the host's.
    #[arg(long, value_name = "FEATURES")]
    pub target_features: Option<String>,
    /// A pipeline in MLIR's syntax mixing tessera stages (with options) and upstream passes.
    #[arg(long, value_name = "PIPELINE")]
    pub pass_pipeline: Option<String>,
    /// List tessera's stages (with options) and the upstream passes, and exit.
    #[arg(long)]
    pub list_passes: bool,
    /// Print the CPU target model tiles and code are chosen for (this machine's, or the one
    /// --target-cpu and --target-features name), and exit.
    #[arg(long)]
    pub print_target: bool,
    /// With -O (CPU): the tuning cache whose choices compiles use (default: the file
    /// TESSERA_TUNING_CACHE names, else ~/.cache/tessera/tuning.json; tessera-tune writes it).
    #[arg(long, value_name = "FILE")]
    pub tuning_cache: Option<PathBuf>,
    /// Print the pipeline that runs, in the form --pass-pipeline takes, to stderr.
    #[arg(long)]
    pub dump_pass_pipeline: bool,
    /// Print the IR after every step to stderr.
    #[arg(long)]
    pub print_ir_after_all: bool,
    /// Print the IR before every step to stderr.
    #[arg(long)]
    pub print_ir_before_all: bool,
    /// Print the IR after the steps of this name (repeatable).
    #[arg(long, value_name = "NAME")]
    pub print_ir_after: Vec<String>,
    /// Print the IR before the steps of this name (repeatable).
    #[arg(long, value_name = "NAME")]
    pub print_ir_before: Vec<String>,
    /// Write the input and the IR after every step as numbered files into DIR.
    #[arg(long, value_name = "DIR")]
    pub dump_dir: Option<PathBuf>,
    /// Report the time of every step to stderr: `--timing` (a table) or `--timing=json`.
    #[arg(long, value_enum, num_args = 0..=1, default_missing_value = "text", require_equals = true)]
    pub timing: Option<TimingFormat>,
    /// Instead of the output, report which ops became one kernel after fusion and why the
    /// others did not (`--fusion-report` text, or `--fusion-report=json`); runs the pipeline
    /// up to its fusion stage.
    #[arg(long, value_enum, num_args = 0..=1, default_missing_value = "text", require_equals = true)]
    pub fusion_report: Option<ReportFormat>,
    /// What to print: `tsr` (the canonical model), `mlir`, `llvm-ir`, or `obj` (needs -o).
    /// By default: `tsr`, or `mlir` when a pipeline runs or the input is MLIR.
    #[arg(long, value_enum)]
    pub emit: Option<Emit>,
    /// With MLIR output: print locations (each op's `.tsr` file:line:col and value name), as
    /// `mlir-opt --mlir-print-debuginfo` does.
    #[arg(long)]
    pub mlir_print_debuginfo: bool,

    /// Run MLIR's verifier after every pass of every stage, as `mlir-opt --verify-each` does,
    /// to find the pass that breaks the IR (release builds otherwise verify what enters and
    /// leaves the pipeline, every upstream pass's result and every step on MLIR input, and
    /// trust tessera's stages in between)
    #[arg(long)]
    pub verify_each: bool,
    /// Print the reference of every registered op (Markdown) and exit.
    #[arg(long, conflicts_with_all = ["input", "split_input_file", "verify_diagnostics"])]
    pub print_op_reference: bool,
}

/// The targets of `--target`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum TargetArg {
    /// The host's CPU, through LLVM.
    Cpu,
    /// NVIDIA GPUs, through NVVM and PTX.
    Cuda,
}

impl TargetArg {
    /// The pipeline's target.
    pub fn target(self) -> Target {
        match self {
            TargetArg::Cpu => Target::Cpu,
            TargetArg::Cuda => Target::Cuda,
        }
    }
}

/// How the input is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum InputFormat {
    /// tessera IR.
    Tsr,
    /// MLIR text.
    Mlir,
    /// An ONNX model, imported (as `tessera-import` does).
    Onnx,
}

/// How timing is reported.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum TimingFormat {
    /// A table, as MLIR's `--mlir-timing`.
    Text,
    /// `{"total_ms": ..., "steps": [{"name": ..., "ms": ...}]}`.
    Json,
}

/// How the fusion report is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ReportFormat {
    /// Per function: each kernel with its ops (`.tsr` line, value name), then every op left
    /// unfused with the reason.
    Text,
    /// The same as JSON: `{"functions": [{"name": ..., "kernels": [...], "ops": [...]}]}`, each
    /// op with `fused` and, when not, a `reason`.
    Json,
}

/// What `tessera-opt` prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Emit {
    /// The module in canonical `.tsr` form.
    Tsr,
    /// MLIR, after the pipeline (or after `tessera-convert-to-linalg` when none is given).
    Mlir,
    /// LLVM IR (the pipeline must end in the LLVM dialect; -O3 when none is given).
    LlvmIr,
    /// An object file with the C interface (`_mlir_ciface_<name>`) of every function;
    /// needs `-o FILE`.
    Obj,
    /// The PTX of every kernel, one text `ptxas` assembles (the pipeline must assemble
    /// kernels: --target=cuda; -O3 when none is given).
    Ptx,
}

/// Why `tessera-opt` could not read its input or write its output.
#[derive(Debug, thiserror::Error)]
pub enum IoError {
    /// The input file could not be read.
    #[error("cannot read '{path}': {source}")]
    Read {
        /// The file.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// The output could not be written.
    #[error("cannot write '{path}': {source}")]
    Write {
        /// The file, or `<stdout>`.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
}

/// Runs `tessera-opt` with `args`, writing diagnostics and instrumentation to `stderr`.
pub fn run_opt(args: &OptArgs, stderr: &mut dyn Write) -> ExitCode {
    let usage = |stderr: &mut dyn Write, message: &str| {
        let _ = writeln!(stderr, "tessera-opt: error: {message}");
        ExitCode::from(2)
    };
    if args.emit == Some(Emit::Obj) && args.output.is_none() {
        return usage(stderr, "--emit=obj needs an output file: add -o FILE");
    }
    if args.print_op_reference {
        return write_output(args, &render_reference(&registry()), stderr);
    }
    if args.list_passes {
        return write_output(args, &list_passes(), stderr);
    }
    if args.print_target {
        return match named_cpu_model(args) {
            Ok(model) => {
                let model = model.unwrap_or_else(|| CpuModel::host().clone());
                write_output(args, &model.to_string(), stderr)
            }
            Err(message) => usage(stderr, &message),
        };
    }
    let format =
        args.input_format
            .unwrap_or(match args.input.as_deref().and_then(Path::extension) {
                Some(extension) if extension == "mlir" => InputFormat::Mlir,
                Some(extension) if extension == "onnx" => InputFormat::Onnx,
                _ => InputFormat::Tsr,
            });
    if format != InputFormat::Onnx && !args.input_shapes.is_empty() {
        return usage(stderr, "--input-shape applies to ONNX models");
    }
    if format == InputFormat::Onnx && args.split_input_file {
        return usage(stderr, "--split-input-file does not apply to ONNX models");
    }
    let pipeline = match chosen_pipeline(args) {
        // A preset on MLIR input starts where MLIR does: after the graph's stages.
        Ok(Some(preset)) if format == InputFormat::Mlir && args.pass_pipeline.is_none() => {
            Some(preset.without_graph_stages())
        }
        Ok(pipeline) => pipeline,
        Err(PipelineChoiceError::Flags(message)) => return usage(stderr, &message),
        Err(PipelineChoiceError::Text(diagnostic)) => {
            let _ = write!(stderr, "{}", diagnostic.render(&SourceFile::new("", "")));
            return ExitCode::from(2);
        }
    };
    if let Err(message) = check_printed_steps(args, pipeline.as_ref()) {
        return usage(stderr, &message);
    }
    if args.dump_pass_pipeline {
        let _ = writeln!(
            stderr,
            "{}",
            pipeline
                .as_ref()
                .map_or_else(|| "builtin.module()".to_string(), ToString::to_string)
        );
    }
    let (file, mut imported) = if format == InputFormat::Onnx {
        let Some(path) = args.input.as_deref().filter(|p| p.as_os_str() != "-") else {
            return usage(
                stderr,
                "an ONNX model is read from a file, not standard input",
            );
        };
        match load_model(path, &args.input_shapes, "tessera-opt") {
            Ok(model) => {
                for note in &model.notes {
                    let _ = writeln!(stderr, "tessera-opt: note: {note}");
                }
                (model.file, Some(model.module))
            }
            Err(message) => {
                let _ = writeln!(stderr, "{}", message.trim_end());
                return ExitCode::FAILURE;
            }
        }
    } else {
        let (name, bytes) = match read_input(args.input.as_deref()) {
            Ok(input) => input,
            Err(error) => {
                let _ = writeln!(stderr, "tessera-opt: error: {error}");
                return ExitCode::FAILURE;
            }
        };
        let (file, decode_error) = decode(&name, &bytes);
        if let Some(diag) = decode_error {
            let _ = write!(stderr, "{}", diag.render(&file));
            return ExitCode::FAILURE;
        }
        (file, None)
    };
    let whole = 0..file.text().len();
    let chunks = if args.split_input_file {
        split_chunks(file.text())
    } else {
        std::iter::once(whole).collect()
    };
    let registry = registry();
    let context = MlirContext::new();
    if args.verify_each {
        context.set_verify_each(true);
    }
    let mut failed = false;
    let mut outputs = Vec::new();
    let mut times: Vec<StepTime> = Vec::new();
    for chunk in chunks {
        let loaded = match format {
            InputFormat::Tsr => load(&file, chunk.clone(), &registry).map(Program::Graph),
            InputFormat::Onnx => imported
                .take()
                .map(Program::Graph)
                .ok_or_else(|| vec![Diagnostic::unlocated("an ONNX model is one module")]),
            InputFormat::Mlir => load_mlir(&context, &file, chunk.clone()).map(Program::Mlir),
        };
        let loaded = loaded.map(|program| match program {
            Program::Graph(module) if args.weights_as_params => {
                Program::Graph(weights_as_params(&module).0)
            }
            program => program,
        });
        let result = loaded.and_then(|program| {
            process(
                args,
                &context,
                &file,
                program,
                pipeline.as_ref(),
                &mut times,
                stderr,
            )
        });
        let reported = match (&result, args.verify_diagnostics) {
            (_, true) => check_expected(
                &file,
                chunk,
                result.as_ref().err().map_or(&[][..], Vec::as_slice),
            ),
            (Err(diagnostics), false) => diagnostics.clone(),
            (Ok(_), false) => Vec::new(),
        };
        failed |= !reported.is_empty();
        let _ = write!(stderr, "{}", render_all(&reported, &file));
        if let Ok(text) = result {
            outputs.push(text);
        }
    }
    if let Some(format) = args.timing {
        let _ = write!(
            stderr,
            "{}",
            timing_report(&times, format == TimingFormat::Json)
        );
    }
    if failed {
        return ExitCode::FAILURE;
    }
    write_output(args, &outputs.join(&format!("{SPLIT_MARKER}\n")), stderr)
}

/// Checks that every step `--print-ir-after=`/`--print-ir-before=` names runs in `pipeline`.
fn check_printed_steps(args: &OptArgs, pipeline: Option<&Pipeline>) -> Result<(), String> {
    let steps: Vec<String> = pipeline
        .map(|p| p.elements.iter().map(|e| e.name()).collect())
        .unwrap_or_default();
    let flags = [
        ("--print-ir-after", &args.print_ir_after),
        ("--print-ir-before", &args.print_ir_before),
    ];
    for (flag, names) in flags {
        if let Some(name) = names.iter().find(|n| !steps.contains(n)) {
            let hint = did_you_mean(name, steps.iter().map(String::as_str));
            return Err(match steps.is_empty() {
                true => {
                    format!("{flag}={name}: no pipeline runs (add -O LEVEL or --pass-pipeline)")
                }
                false => format!(
                    "{flag}={name}: no step of the pipeline has that name{hint} (steps: {})",
                    steps.join(", ")
                ),
            });
        }
    }
    Ok(())
}

/// Why the flags give no pipeline.
enum PipelineChoiceError {
    /// The flags contradict each other or name what does not exist.
    Flags(String),
    /// `--pass-pipeline`'s text is wrong, at this place in it.
    Text(Diagnostic),
}

impl From<String> for PipelineChoiceError {
    fn from(message: String) -> PipelineChoiceError {
        PipelineChoiceError::Flags(message)
    }
}

/// The pipeline the flags ask for (`None`: nothing is lowered).
fn chosen_pipeline(args: &OptArgs) -> Result<Option<Pipeline>, PipelineChoiceError> {
    if let Some(text) = &args.pass_pipeline {
        return Pipeline::parse(text)
            .map(Some)
            .map_err(|e| PipelineChoiceError::Text(e.diagnostic(text)));
    }
    let flag_values = [
        (
            "--schedule",
            OptionKind::File,
            args.schedule.as_ref().map(|p| p.display().to_string()),
        ),
        ("--gpu-chip", OptionKind::GpuChip, args.gpu_chip.clone()),
    ];
    for (flag, kind, value) in flag_values {
        if let Some(value) = value {
            kind.check(flag, &value)?;
        }
    }
    let named_model = named_cpu_model(args)?;
    let target = args.target.target();
    let for_other_target = match target {
        Target::Cpu => args.gpu_chip.as_ref().map(|_| "--gpu-chip"),
        Target::Cuda => [
            (args.threads.is_some(), "--threads"),
            (args.target_cpu.is_some(), "--target-cpu"),
            (args.target_features.is_some(), "--target-features"),
            (args.schedule.is_some(), "--schedule"),
        ]
        .into_iter()
        .find_map(|(given, flag)| given.then_some(flag)),
    };
    if let Some(flag) = for_other_target {
        return Err(format!("{flag} does not apply to --target={target}").into());
    }
    let wrong_output = match (target, args.emit) {
        (Target::Cpu, Some(Emit::Ptx)) => Some("--emit=ptx needs --target=cuda"),
        (Target::Cuda, Some(Emit::LlvmIr | Emit::Obj)) => {
            Some("--emit=llvm-ir and --emit=obj need --target=cpu (the GPU's is --emit=ptx)")
        }
        _ => None,
    };
    if let Some(message) = wrong_output {
        return Err(message.to_string().into());
    }
    let schedule = args.schedule.as_ref().map(|p| p.display().to_string());
    let level = match (args.opt_level, args.emit) {
        (Some(level), _) => level,
        // LLVM IR, objects and PTX need a full pipeline: the default is -O3.
        (None, Some(Emit::LlvmIr | Emit::Obj | Emit::Ptx)) => 3,
        (None, _)
            if args.no_fusion
                || schedule.is_some()
                || args.threads.is_some()
                || args.target_cpu.is_some()
                || args.target_features.is_some()
                || args.gpu_chip.is_some()
                || target != Target::Cpu =>
        {
            return Err(
                "--no-fusion, --schedule, --threads, --target, --target-* and --gpu-chip apply to a preset: add -O LEVEL"
                    .to_string()
                    .into(),
            )
        }
        (None, _) => return Ok(None),
    };
    let mut pipeline = Pipeline::preset_for(target, level, !args.no_fusion, schedule.as_deref())
        .with_threads(args.threads.unwrap_or(1) as usize);
    if let Some(chip) = &args.gpu_chip {
        pipeline.set_option("tessera-lower-to-nvvm", "chip", chip);
    }
    if let Some(cpu) = &args.target_cpu {
        pipeline.set_option("tessera-lower-to-llvm", "cpu", cpu);
    }
    if let Some(features) = &args.target_features {
        pipeline.set_option("tessera-lower-to-llvm", "features", features);
    }
    let named_unit = named_model
        .as_ref()
        .map(|model| if model.lanes >= 16 { "avx512" } else { "avx2" });
    crate::tuning_cache::apply(
        &mut pipeline,
        args.tuning_cache.as_deref(),
        args.target_cpu.as_deref(),
        named_unit,
        &mut std::io::stderr(),
    );
    // Register tiles and cache sizes follow a named target's model, not the host's.
    if let Some(model) = named_model {
        let unit = if model.lanes >= 16 { "avx512" } else { "avx2" };
        pipeline.set_option("tessera-tile", "unit", unit);
        let l2 = model.l2_bytes.to_string();
        pipeline.set_option("tessera-tile", "l2", &l2);
        pipeline.set_option("tessera-fuse", "l2", &l2);
        pipeline.set_option("tessera-lower-to-llvm", "l2", &l2);
        // The model's cores, not the host's: the module's kernels are then the same on
        // every machine (outlined for parallel compilation only where it has several).
        pipeline.set_option(
            "tessera-lower-to-llvm",
            "compile-threads",
            &model.cores.to_string(),
        );
    }
    Ok(Some(pipeline))
}

/// The model of the CPU `--target-cpu` and `--target-features` name (checked), or `None`
/// where neither is given (the host's is the one then).
fn named_cpu_model(args: &OptArgs) -> Result<Option<CpuModel>, String> {
    let flags = [
        ("--target-cpu", OptionKind::Cpu, &args.target_cpu),
        (
            "--target-features",
            OptionKind::Features,
            &args.target_features,
        ),
    ];
    for (flag, kind, value) in flags {
        if let Some(value) = value {
            kind.check(flag, value)?;
        }
    }
    if args.target_cpu.is_none() && args.target_features.is_none() {
        return Ok(None);
    }
    Ok(Some(CpuModel::named(
        args.target_cpu.as_deref(),
        args.target_features.as_deref(),
    )))
}

/// The chunk `range` of `file` parsed as MLIR, errors located in the file.
fn load_mlir<'c>(
    context: &'c MlirContext,
    file: &SourceFile,
    range: std::ops::Range<usize>,
) -> Result<melior::ir::Module<'c>, Vec<Diagnostic>> {
    // Keep the chunk's line numbers: pad with the newlines before it.
    let before = file.text()[..range.start].matches('\n').count();
    let text = format!("{}{}", "\n".repeat(before), &file.text()[range]);
    context
        .parse_module(&text)
        .map_err(|errors| tessera::mlir::bridge::located::located_diagnostics(&errors, file))
}

/// Runs the pipeline (or, for `--emit=mlir` on a model, the conversion) on one chunk and
/// renders what `--emit` asks for.
fn process(
    args: &OptArgs,
    context: &MlirContext,
    file: &SourceFile,
    program: Program<'_>,
    pipeline: Option<&Pipeline>,
    times: &mut Vec<StepTime>,
    stderr: &mut dyn Write,
) -> Result<String, Vec<Diagnostic>> {
    let graph = match &program {
        Program::Graph(module) => Some(module.clone()),
        Program::Mlir(_) => None,
    };
    if let Some(format) = args.fusion_report {
        return fusion_report_of(
            args.target.target(),
            context,
            file,
            program,
            pipeline,
            format,
            stderr,
        );
    }
    let conversion;
    let pipeline = match (pipeline, &program, args.emit) {
        (Some(p), _, _) => Some(p),
        (None, Program::Graph(_), Some(Emit::Mlir)) => {
            conversion = Pipeline::parse("builtin.module(tessera-convert-to-linalg)")
                .map_err(|e| vec![Diagnostic::unlocated(e.message)])?;
            Some(&conversion)
        }
        _ => None,
    };
    let instrumentation = Instrumentation {
        print_before: selection(args.print_ir_before_all, &args.print_ir_before),
        print_after: selection(args.print_ir_after_all, &args.print_ir_after),
        dump_dir: args.dump_dir.clone(),
    };
    let env = StageEnv { context, file };
    let program = match pipeline {
        Some(p) => {
            let (program, steps) = run_pipeline(program, p, &env, &instrumentation, stderr)
                .map_err(|failure| {
                    let mut diagnostics = failure.diagnostics;
                    if let (Some(path), Some(first)) = (failure.reproducer, diagnostics.first_mut())
                    {
                        first.notes.push(Diagnostic {
                            severity: tessera::diag::Severity::Note,
                            ..Diagnostic::unlocated(format!(
                                "reproducer for '{}' written to {}",
                                failure.step,
                                path.display()
                            ))
                        });
                    }
                    diagnostics
                })?;
            times.extend(steps);
            program
        }
        None => program,
    };
    let llvm = match (&graph, pipeline) {
        (Some(graph), Some(pipeline)) => jit_options(graph, pipeline),
        _ => LlvmOptions::DEFAULT,
    };
    let kernels_assembled = pipeline.is_some_and(|p| p.has_stage("tessera-lower-to-nvvm"));
    emit(args, program, graph.as_ref(), llvm, kernels_assembled)
}

/// `--fusion-report`: the pipeline up to its last fusion stage (or the conversion), then the
/// report of what it fused.
fn fusion_report_of(
    target: Target,
    context: &MlirContext,
    file: &SourceFile,
    program: Program<'_>,
    pipeline: Option<&Pipeline>,
    format: ReportFormat,
    stderr: &mut dyn Write,
) -> Result<String, Vec<Diagnostic>> {
    let preset = Pipeline::preset_for(target, 3, true, None);
    let env = StageEnv { context, file };
    let reports = report_of_pipeline(program, pipeline.unwrap_or(&preset), &env, stderr)?;
    Ok(match format {
        ReportFormat::Text => report_text(&reports),
        ReportFormat::Json => report_json(&reports),
    })
}

fn selection(all: bool, names: &[String]) -> Selection {
    match (all, names.is_empty()) {
        (true, _) => Selection::All,
        (false, true) => Selection::None,
        (false, false) => Selection::Named(names.to_vec()),
    }
}

/// The output text of `program` as `--emit` asks (an object file is written, giving no text,
/// compiled as `llvm` says); `kernels_assembled` when the pipeline ran
/// `tessera-lower-to-nvvm`, so that no PTX means no kernels rather than a short pipeline.
fn emit(
    args: &OptArgs,
    program: Program<'_>,
    graph: Option<&Module>,
    llvm: LlvmOptions,
    kernels_assembled: bool,
) -> Result<String, Vec<Diagnostic>> {
    let failure = |message: String| vec![Diagnostic::unlocated(message)];
    let default = match program {
        Program::Graph(_) => Emit::Tsr,
        Program::Mlir(_) => Emit::Mlir,
    };
    match (args.emit.unwrap_or(default), program) {
        (Emit::Tsr, program @ Program::Graph(_)) => Ok(program.text()),
        (Emit::Tsr, Program::Mlir(_)) => Err(failure(
            "--emit=tsr needs the tessera graph, but the pipeline converted it to MLIR".into(),
        )),
        (_, Program::Graph(_)) => Err(failure(
            "the pipeline does not convert the model to MLIR (add tessera-convert-to-linalg)"
                .into(),
        )),
        (Emit::Mlir, Program::Mlir(module)) => {
            let flags =
                OperationPrintingFlags::new().enable_debug_info(args.mlir_print_debuginfo, false);
            let text = module
                .as_operation()
                .to_string_with_flags(flags)
                .map_err(|e| failure(format!("cannot print MLIR: {e}")))?;
            Ok(format!("{text}\n"))
        }
        (Emit::Ptx, Program::Mlir(module)) => match kernel_ptx(&module) {
            Some(ptx) => Ok(ptx),
            // Assembled, but nothing left to launch (every result constant or empty).
            None if kernels_assembled => {
                let chip = args.gpu_chip.as_deref().unwrap_or("sm_90");
                Ok(format!(
                    "//\n// tessera: this program launches no GPU kernels (every result is a \
                     constant or empty)\n//\n\n.version 8.0\n.target {chip}\n.address_size 64\n"
                ))
            }
            None => Err(failure(
                "the pipeline does not assemble GPU kernels (it must end in tessera-lower-to-nvvm)"
                    .into(),
            )),
        },
        (Emit::LlvmIr, Program::Mlir(module)) => llvm_ir(&module)
            .ok_or_else(|| failure("the pipeline does not end in the LLVM dialect".into())),
        (Emit::Obj, Program::Mlir(module)) => {
            let signatures = graph.map(Signature::of_module).unwrap_or_default();
            let path = args
                .output
                .as_deref()
                .ok_or_else(|| failure("--emit=obj needs -o FILE".into()))?;
            let _codegen = Activity::enter("llvm-codegen", &args_input_name(args), None);
            write_object_file(&module, &signatures, llvm, path)
                .map(|()| String::new())
                .map_err(failure)
        }
    }
}

/// The input's name, as reports say it.
fn args_input_name(args: &OptArgs) -> String {
    args.input
        .as_deref()
        .filter(|p| p.as_os_str() != "-")
        .map_or_else(|| "<stdin>".into(), |p| p.display().to_string())
}

/// `--list-passes`: tessera's stages with their options, then the upstream passes.
fn list_passes() -> String {
    let mut out = String::from("tessera stages:\n");
    for stage in stages() {
        out.push_str(&format!("  {:<28} {}\n", stage.name(), stage.summary()));
        for option in stage.options() {
            out.push_str(&format!("      {}=...  {}\n", option.name, option.doc));
        }
    }
    out.push_str("\nupstream MLIR passes (any of them, with their options, in --pass-pipeline):\n");
    for line in UPSTREAM_PASSES.lines() {
        let (name, summary) = line.split_once('\t').unwrap_or((line, ""));
        out.push_str(&format!("  {name:<40} {summary}\n"));
    }
    out
}

/// The input's display name and bytes; `-` or no path is standard input (`<stdin>`).
fn read_input(path: Option<&Path>) -> Result<(String, Vec<u8>), IoError> {
    let name = match path {
        Some(p) if p.as_os_str() != "-" => p.display().to_string(),
        _ => "<stdin>".to_string(),
    };
    let mut bytes = Vec::new();
    let result = match path {
        Some(p) if p.as_os_str() != "-" => std::fs::read(p).map(|b| bytes = b),
        _ => std::io::stdin().read_to_end(&mut bytes).map(|_| ()),
    };
    result.map_err(|source| IoError::Read {
        path: name.clone(),
        source,
    })?;
    Ok((name, bytes))
}

fn write_output(args: &OptArgs, text: &str, stderr: &mut dyn Write) -> ExitCode {
    let result = match &args.output {
        Some(_) if args.emit == Some(Emit::Obj) => Ok(()),
        Some(path) => std::fs::write(path, text).map_err(|source| IoError::Write {
            path: path.display().to_string(),
            source,
        }),
        None => std::io::stdout()
            .write_all(text.as_bytes())
            .map_err(|source| IoError::Write {
                path: "<stdout>".into(),
                source,
            }),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            let _ = writeln!(stderr, "tessera-opt: error: {error}");
            ExitCode::FAILURE
        }
    }
}
