//! `tessera-apply-schedule{file=PATH}`: applies a user's transform-dialect schedule (a module
//! with `transform.named_sequence @__transform_main`) in place of tessera's tiling and
//! vectorization. Precondition: MLIR, in whatever state the schedule expects.

use crate::diag::Diagnostic;
use crate::mlir::pipeline::schedule::{apply_schedule, Author};
use crate::mlir::pipeline::stages::{
    expect_mlir, stage_error, OptionKind, Program, Stage, StageEnv, StageOption, StageOptions,
};

/// A user schedule as a stage.
pub struct ApplySchedule;

impl Stage for ApplySchedule {
    fn name(&self) -> &'static str {
        "tessera-apply-schedule"
    }

    fn summary(&self) -> &'static str {
        "Apply a transform-dialect schedule from a file (@__transform_main). Input: MLIR."
    }

    fn options(&self) -> &'static [StageOption] {
        &[StageOption {
            name: "file",
            doc: "the schedule's path",
            kind: OptionKind::File,
        }]
    }

    fn run<'c>(
        &self,
        program: Program<'c>,
        env: &StageEnv<'c, '_>,
        options: &StageOptions,
    ) -> Result<Program<'c>, Vec<Diagnostic>> {
        let mut module = expect_mlir(program, self.name())?;
        let path = options
            .0
            .get("file")
            .ok_or_else(|| stage_error(self.name(), "needs the option file=PATH"))?;
        let text = std::fs::read_to_string(path).map_err(|e| {
            stage_error(
                self.name(),
                format!("cannot read the schedule '{path}': {e}"),
            )
        })?;
        // Verified at once, so that an invalid result is reported as the schedule's.
        apply_schedule(
            env,
            &mut module,
            &text,
            &format!("'{path}'"),
            self.name(),
            Author::User,
        )?;
        Ok(Program::Mlir(module))
    }
}
