//! tessera's own pipeline stages, one per file, and what they share: the program they
//! transform (the graph before conversion, MLIR after), their options, and running upstream
//! passes; the stages every target shares (decompose, convert, fuse, apply a schedule,
//! bufferize), and the registry of every stage, the targets' too. Each stage states its
//! preconditions and leaves a verified program.

mod apply_schedule;
mod bufferize;
mod convert_to_linalg;
mod decompose;
mod fuse;

pub use apply_schedule::ApplySchedule;
pub use bufferize::Bufferize;
pub use convert_to_linalg::ConvertToLinalg;
pub use decompose::DecomposeStage;
pub use fuse::Fuse;

use crate::diag::Diagnostic;
use crate::ir::Module;
use crate::mlir::bridge::context::MlirContext;
use crate::mlir::bridge::located::located_diagnostics;
use crate::source::SourceFile;
use melior::ir::Module as MlirModule;
use melior::pass::PassManager;
use melior::utility::parse_pass_pipeline;
use std::collections::BTreeMap;

/// What a pipeline transforms: the verified graph until `tessera-convert-to-linalg`, MLIR after.
pub enum Program<'c> {
    /// A verified tessera module.
    Graph(Module),
    /// An MLIR module.
    Mlir(MlirModule<'c>),
}

impl Program<'_> {
    /// The program's text: canonical `.tsr` or MLIR.
    pub fn text(&self) -> String {
        match self {
            Program::Graph(module) => crate::syntax::printer::print_module(module),
            Program::Mlir(module) => format!("{}\n", module.as_operation()),
        }
    }
}

/// The upstream passes that compute f16 and bf16 arithmetic and math in f32, rounding each
/// result to its type (the same value as a correctly rounded narrow operation: f32 holds more
/// than twice their mantissa bits). x86 has no bf16 arithmetic, and LLVM 19 aborts on some
/// bf16 vectors ("Do not know how to soft promote this operator's operand").
pub const NARROW_FLOATS_IN_F32: &str =
    "arith-emulate-unsupported-floats{source-types=bf16,f16 target-type=f32},math-legalize-to-f32";

/// `canonicalize` without its region simplification (dead block arguments, block merging),
/// which walked the whole module again after every round of patterns: 24 M of the 82 M
/// instructions canonicalization took on the two-layer GPT block at -O3. The stages run it on
/// structured IR (scf, no branches between blocks), where it found nothing to simplify: every
/// testdata model's output at -O0..-O3 is the same without it.
pub const CANONICALIZE: &str = "canonicalize{region-simplify=disabled}";

/// What every stage runs with.
pub struct StageEnv<'c, 'f> {
    /// The MLIR context of the program.
    pub context: &'c MlirContext,
    /// The source the program came from, for locating diagnostics.
    pub file: &'f SourceFile,
}

/// An option a stage accepts (`sizes` in `tessera-tile{sizes=64,64,32}`).
#[derive(Debug)]
pub struct StageOption {
    /// Its key.
    pub name: &'static str,
    /// What it means and what values it takes.
    pub doc: &'static str,
    /// The values it takes, checked when the pipeline is read (before anything runs).
    pub kind: OptionKind,
}

/// What values an option takes.
#[derive(Debug)]
pub enum OptionKind {
    /// Integers separated by commas, none below `min`.
    Integers {
        /// The least value allowed.
        min: i64,
    },
    /// A positive integer.
    Positive,
    /// One of these words.
    OneOf(&'static [&'static str]),
    /// The path of a readable file.
    File,
    /// An x86-64 CPU name LLVM knows.
    Cpu,
    /// x86 CPU features, LLVM style: `+name` or `-name`, separated by commas.
    Features,
    /// An NVIDIA chip LLVM generates PTX for (`sm_90`).
    GpuChip,
}

/// The names of a `name<TAB>description` table with `#` comment lines.
pub fn table_names(table: &'static str) -> impl Iterator<Item = &'static str> {
    table
        .lines()
        .filter(|line| !line.starts_with('#'))
        .filter_map(|line| line.split('\t').next())
}

impl OptionKind {
    /// Checks `value`, written for option `key`.
    pub fn check(&self, key: &str, value: &str) -> Result<(), String> {
        // A short table is listed whole; a long one only when no name is close.
        let known = |table: &'static str, name: &str, what: &str, plural: &str| {
            if table_names(table).any(|n| n == name) {
                return Ok(());
            }
            let all: Vec<&str> = table_names(table).collect();
            let hint = match crate::suggest::did_you_mean(name, table_names(table)) {
                hint if all.len() <= 20 => format!("{hint} ({plural}: {})", all.join(", ")),
                hint if hint.is_empty() => format!(" ({plural}: {})", all.join(", ")),
                hint => hint,
            };
            Err(format!(
                "option '{key}': '{name}' is not {what} LLVM knows{hint}"
            ))
        };
        match self {
            OptionKind::Integers { min } => {
                for item in value.split(',') {
                    let n = item.trim().parse::<i64>().map_err(|_| {
                        format!("option '{key}' must be a list of integers, but is '{value}'")
                    })?;
                    if n < *min {
                        return Err(format!(
                            "option '{key}' must have no value below {min}, but has {n}"
                        ));
                    }
                }
                Ok(())
            }
            OptionKind::Positive => match value.parse::<u64>() {
                Ok(n) if n > 0 => Ok(()),
                _ => Err(format!(
                    "option '{key}' must be a positive integer, but is '{value}'"
                )),
            },
            OptionKind::OneOf(allowed) => {
                StageOptions([(key.to_string(), value.to_string())].into())
                    .choice(key, allowed)
                    .map(|_| ())
            }
            OptionKind::File => std::fs::File::open(value)
                .map(|_| ())
                .map_err(|e| format!("option '{key}': cannot read '{value}': {e}")),
            OptionKind::Cpu => known(crate::mlir::cpu::X86_CPUS, value, "an x86-64 CPU", "CPUs"),
            OptionKind::GpuChip => known(
                crate::mlir::gpu::GPU_CHIPS,
                value,
                "an NVIDIA chip",
                "chips",
            ),
            OptionKind::Features => {
                for feature in value.split(',').map(str::trim) {
                    let Some(name) = feature.strip_prefix(['+', '-']) else {
                        return Err(format!(
                            "option '{key}': feature '{feature}' must start with '+' or '-'"
                        ));
                    };
                    known(
                        crate::mlir::cpu::X86_FEATURES,
                        name,
                        "an x86-64 feature",
                        "features",
                    )?;
                }
                Ok(())
            }
        }
    }
}

/// The options written for a stage, by key, values as written.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StageOptions(pub BTreeMap<String, String>);

impl StageOptions {
    /// Option `key` as a positive integer, `default` when it is not written.
    pub fn positive(&self, key: &str, default: u64) -> Result<u64, String> {
        match self.0.get(key) {
            None => Ok(default),
            Some(text) => text.parse::<u64>().ok().filter(|&n| n > 0).ok_or_else(|| {
                format!("option '{key}' must be a positive integer, but is '{text}'")
            }),
        }
    }

    /// Option `key`, which must be one of `allowed` when written.
    pub fn choice(&self, key: &str, allowed: &[&str]) -> Result<Option<&str>, String> {
        match self.0.get(key).map(String::as_str) {
            None => Ok(None),
            Some(value) if allowed.contains(&value) => Ok(Some(value)),
            Some(other) => {
                let quoted: Vec<String> = allowed.iter().map(|a| format!("'{a}'")).collect();
                let listed = match quoted.split_last() {
                    Some((last, [])) => last.clone(),
                    Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
                    None => String::new(),
                };
                Err(format!("option '{key}' must be {listed}, but is '{other}'"))
            }
        }
    }

    /// Option `key` as a list of integers (`64,64,32`), when written.
    pub fn int_list(&self, key: &str) -> Option<Result<Vec<i64>, String>> {
        self.0.get(key).map(|text| {
            text.split(',')
                .map(|v| {
                    v.trim().parse::<i64>().map_err(|_| {
                        format!("option '{key}' must be a list of integers, but is '{text}'")
                    })
                })
                .collect()
        })
    }
}

/// One of tessera's stages.
pub trait Stage: Sync {
    /// Its name in pipelines (`tessera-fuse`).
    fn name(&self) -> &'static str;
    /// One line: what it does, and its precondition.
    fn summary(&self) -> &'static str;
    /// The options it accepts.
    fn options(&self) -> &'static [StageOption] {
        &[]
    }
    /// Whether it runs on the tessera graph (before the conversion to MLIR).
    fn takes_graph(&self) -> bool {
        false
    }
    /// Transforms `program`.
    fn run<'c>(
        &self,
        program: Program<'c>,
        env: &StageEnv<'c, '_>,
        options: &StageOptions,
    ) -> Result<Program<'c>, Vec<Diagnostic>>;
}

/// Every stage, the shared ones and the targets', in pipeline order.
pub fn stages() -> &'static [&'static dyn Stage] {
    use crate::mlir::cpu::stages::{LowerToLlvm, Parallelize, Tile, Vectorize};
    use crate::mlir::gpu::stages::{LowerToNvvm, MapToGpu};
    &[
        &DecomposeStage,
        &ConvertToLinalg,
        &Fuse,
        &Tile,
        &Vectorize,
        &ApplySchedule,
        &Bufferize,
        &Parallelize,
        &LowerToLlvm,
        &MapToGpu,
        &LowerToNvvm,
    ]
}

/// The stage named `name`.
pub fn stage(name: &str) -> Option<&'static dyn Stage> {
    stages().iter().copied().find(|s| s.name() == name)
}

/// A stage's error that has no place in the source.
pub fn stage_error(stage: &str, message: impl std::fmt::Display) -> Vec<Diagnostic> {
    vec![Diagnostic::unlocated(format!(
        "in stage '{stage}': {message}"
    ))]
}

/// The MLIR module of `program`, or an error naming what `stage` needs.
pub fn expect_mlir<'c>(
    program: Program<'c>,
    stage: &str,
) -> Result<MlirModule<'c>, Vec<Diagnostic>> {
    match program {
        Program::Mlir(module) => Ok(module),
        Program::Graph(_) => Err(stage_error(
            stage,
            "needs MLIR: run tessera-convert-to-linalg first",
        )),
    }
}

/// Runs upstream passes (`text` inside `builtin.module(...)`) on `module`; a failure comes back
/// as MLIR's diagnostics, located in the source, under `stage`'s name. The result is verified
/// only where every pass's is (`MlirContext::verify_each`): otherwise once, at the end of the
/// step (`verify_step`), which on the GPT block saved 8 of 14 verifications at -O3 (each of a
/// module of up to 670 KB of text).
pub fn run_upstream(
    env: &StageEnv<'_, '_>,
    module: &mut MlirModule<'_>,
    text: &str,
    stage: &str,
) -> Result<(), Vec<Diagnostic>> {
    let manager = PassManager::new(env.context.context());
    manager.enable_verifier(env.context.verify_each());
    parse_pass_pipeline(
        manager.as_operation_pass_manager(),
        &format!("builtin.module({text})"),
    )
    .map_err(|e| stage_error(stage, format!("invalid pass pipeline '{text}': {e}")))?;
    env.context.take_diagnostics();
    let outcome = manager.run(module);
    if outcome.is_ok() && (!env.context.verify_each() || module.as_operation().verify()) {
        return Ok(());
    }
    Err(failure_of(env, stage))
}

/// `program` if it is the graph or MLIR that verifies; otherwise the verifier's diagnostics
/// under `step`'s name. Every step of a pipeline ends with it, so no stage starts on
/// invalid IR.
pub fn verify_step<'c>(
    env: &StageEnv<'c, '_>,
    program: Program<'c>,
    step: &str,
) -> Result<Program<'c>, Vec<Diagnostic>> {
    env.context.take_diagnostics();
    match &program {
        Program::Mlir(module) if !module.as_operation().verify() => Err(failure_of(env, step)),
        _ => Ok(program),
    }
}

/// MLIR's diagnostics since they were last taken, located in the source, under `stage`'s name.
fn failure_of(env: &StageEnv<'_, '_>, stage: &str) -> Vec<Diagnostic> {
    let mut diagnostics = located_diagnostics(&env.context.take_diagnostics(), env.file);
    for d in &mut diagnostics {
        d.message = format!("in stage '{stage}': {}", d.message);
    }
    if diagnostics.is_empty() {
        diagnostics = stage_error(stage, "failed");
    }
    diagnostics
}
