//! Transform-dialect schedules: a module holding `transform.named_sequence @__transform_main`,
//! applied to a payload module through `mlirTransformApplyNamedSequence`, so the schedule
//! never enters the payload.

use crate::diag::Diagnostic;
use crate::mlir::located::located_diagnostics;
use crate::mlir::stages::{stage_error, StageEnv};
use crate::mlir::walk::walk;
use melior::ir::attribute::StringAttribute;
use melior::ir::Module;

/// The entry point a schedule must define.
pub const ENTRY: &str = "__transform_main";

/// The start of a generated schedule: its module and entry point, whose payload handle is
/// `%root`; operations follow, then [`SCHEDULE_TAIL`].
pub const SCHEDULE_HEAD: &str = "module attributes {transform.with_named_sequence} {\n  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {\n";

/// The end of a generated schedule.
pub const SCHEDULE_TAIL: &str = "    transform.yield\n  }\n}\n";

/// Applies the schedule in `text` (named `origin` in messages) to `payload`.
pub fn apply_schedule(
    env: &StageEnv<'_, '_>,
    payload: &mut Module<'_>,
    text: &str,
    origin: &str,
    stage: &str,
) -> Result<(), Vec<Diagnostic>> {
    let schedule = env
        .context
        .parse_module_named(text, origin.trim_matches('\''))
        .map_err(|errors| {
            let details: Vec<String> = errors.iter().map(|e| e.to_string()).collect();
            stage_error(
                stage,
                format!(
                    "the schedule {origin} is not valid MLIR: {}",
                    details.join("; ")
                ),
            )
        })?;
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
        let result = mlir_sys::mlirTransformApplyNamedSequence(
            payload.as_operation().to_raw(),
            entry,
            schedule.as_operation().to_raw(),
            options,
        );
        mlir_sys::mlirTransformOptionsDestroy(options);
        result.value != 0
    };
    if applied && payload.as_operation().verify() {
        return Ok(());
    }
    let mut diagnostics = located_diagnostics(&env.context.take_diagnostics(), env.file);
    for d in &mut diagnostics {
        d.message = format!("in stage '{stage}' ({origin}): {}", d.message);
    }
    if diagnostics.is_empty() {
        diagnostics = stage_error(stage, format!("the schedule {origin} failed"));
    }
    Err(diagnostics)
}
