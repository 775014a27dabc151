//! Transform-dialect schedules: a module holding `transform.named_sequence @__transform_main`,
//! applied to a payload module through `mlirTransformApplyNamedSequence`, so the schedule
//! never enters the payload.

use crate::diag::Diagnostic;
use crate::mlir::bridge::located::located_in;
use crate::mlir::bridge::walk::walk;
use crate::mlir::pipeline::stages::{stage_error, StageEnv};
use crate::mlir::MlirDiagnostic;
use crate::source::SourceFile;
use melior::ir::attribute::StringAttribute;
use melior::ir::Module;
use std::sync::Arc;

/// The entry point a schedule must define.
pub const ENTRY: &str = "__transform_main";

/// The start of a generated schedule: its module and entry point, whose payload handle is
/// `%root`; operations follow, then [`SCHEDULE_TAIL`].
pub const SCHEDULE_HEAD: &str = "module attributes {transform.with_named_sequence} {\n  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {\n";

/// The end of a generated schedule.
pub const SCHEDULE_TAIL: &str = "    transform.yield\n  }\n}\n";

/// Schedule lines that match the `count` ops carrying the unit attribute `marker` at once
/// and split the handle into `%{name}0`, `%{name}1`, ... in the order of the ops in the
/// payload (a walk's order). One match per marked op would walk the whole payload each
/// time: quadratic in the module (tessera-fuse took 9 s on a chain of 400 ops).
pub fn match_each(marker: &str, count: usize, name: &str) -> String {
    let any = "!transform.any_op";
    let handles: Vec<String> = (0..count).map(|i| format!("%{name}{i}")).collect();
    let types = vec![any; count].join(", ");
    format!(
        "    %{name}_all = transform.structured.match attributes {{{marker}}} in %root : ({any}) -> {any}\n    {} = transform.split_handle %{name}_all : ({any}) -> ({types})\n",
        handles.join(", ")
    )
}

/// Whose schedule `apply_schedule` applies, which says whether it verifies the payload after
/// it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Author {
    /// A stage's own: fixed transforms on IR the stage checked. Like the upstream passes
    /// inside a stage, the payload is verified after it only where every pass's result is
    /// (`MlirContext::verify_each`); the pipeline verifies each step's result where it must
    /// (`runner::run_pipeline`).
    Stage,
    /// The user's (`tessera-apply-schedule`): verified at once, so that an invalid result is
    /// reported as the schedule's.
    User,
}

/// Applies the schedule in `text` (named `origin` in messages) to `payload`, verified after it
/// as its `author` says.
pub fn apply_schedule(
    env: &StageEnv<'_, '_>,
    payload: &mut Module<'_>,
    text: &str,
    origin: &str,
    stage: &str,
    author: Author,
) -> Result<(), Vec<Diagnostic>> {
    let name = origin.trim_matches('\'');
    let schedule_file = [Arc::new(SourceFile::new(name, text))];
    let in_stage = |mut diagnostics: Vec<Diagnostic>| {
        for d in &mut diagnostics {
            d.message = format!("in stage '{stage}' ({origin}): {}", d.message);
        }
        diagnostics
    };
    let schedule = env
        .context
        .parse_module_named(text, name)
        .map_err(|errors| in_stage(located_in(&errors, env.file, &schedule_file)))?;
    let mut degenerate = Vec::new();
    walk(&schedule, |op| {
        // MLIR 19 corrupts its heap splitting at 0 (the first part would be empty).
        let split_at_zero = op.name() == "transform.structured.split"
            && op
                .attribute("static_chunk_sizes")
                .is_some_and(|size| size.to_string().starts_with("0 "));
        if split_at_zero {
            degenerate.push(MlirDiagnostic {
                severity: "error",
                location: op.location(),
                message: "'transform.structured.split' after 0 leaves an empty part: split after a positive size".into(),
            });
        }
    });
    if !degenerate.is_empty() {
        return Err(in_stage(located_in(&degenerate, env.file, &schedule_file)));
    }
    let mut entry = None;
    walk(&schedule, |op| {
        let named = op.name() == "transform.named_sequence";
        let is_entry = named
            && op
                .attribute("sym_name")
                .and_then(|a| StringAttribute::try_from(a).ok())
                .is_some_and(|s| s.value() == ENTRY);
        if is_entry && entry.is_none() {
            entry = Some(op.raw());
        }
    });
    let entry = entry.ok_or_else(|| {
        stage_error(
            stage,
            format!("the schedule {origin} has no transform.named_sequence @{ENTRY}"),
        )
    })?;
    env.context.take_diagnostics();
    // SAFETY: the payload, the entry sequence and the schedule module are live operations of
    // the same context; the options are created here and destroyed after use.
    let applied = unsafe {
        let options = mlir_sys::mlirTransformOptionsCreate();
        // The expensive checks verify the whole payload after every transform: quadratic in
        // the module (tessera-fuse on a chain of 400 ops: 9.2 s). The payload is verified
        // once, after the schedule.
        mlir_sys::mlirTransformOptionsEnableExpensiveChecks(options, false);
        let result = mlir_sys::mlirTransformApplyNamedSequence(
            payload.as_operation().to_raw(),
            entry,
            schedule.as_operation().to_raw(),
            options,
        );
        mlir_sys::mlirTransformOptionsDestroy(options);
        result.value != 0
    };
    let verify = author == Author::User || env.context.verify_each();
    if applied && (!verify || payload.as_operation().verify()) {
        return Ok(());
    }
    let mut diagnostics = in_stage(located_in(
        &env.context.take_diagnostics(),
        env.file,
        &schedule_file,
    ));
    if diagnostics.is_empty() {
        diagnostics = stage_error(stage, format!("the schedule {origin} failed"));
    }
    Err(diagnostics)
}
