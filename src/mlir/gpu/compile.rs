//! The whole GPU path up to the runtime in one call: a verified module through a pipeline (a
//! CUDA preset, or one of the user's that ends in `tessera-lower-to-nvvm`) into its launch
//! plan, with the time of every step.

use crate::diag::Diagnostic;
use crate::ir::Module;
use crate::mlir::bridge::context::MlirContext;
use crate::mlir::gpu::launch_plan::{launch_plan, LaunchPlan};
use crate::mlir::pipeline::runner::{lower, StepTime};
use crate::mlir::pipeline::Pipeline;
use crate::source::SourceFile;

/// Runs `pipeline` on `module` (it must assemble the kernels: `tessera-lower-to-nvvm`) and
/// reads the launch plan of the result.
pub fn compile(
    context: &MlirContext,
    module: &Module,
    file: &SourceFile,
    pipeline: &Pipeline,
) -> Result<(LaunchPlan, Vec<StepTime>), Vec<Diagnostic>> {
    let (lowered, steps) = lower(context, module, file, pipeline)?;
    let error = |message: String| vec![Diagnostic::unlocated(message)];
    if !pipeline.has_stage("tessera-lower-to-nvvm") {
        return Err(error(format!(
            "the pipeline {pipeline} does not assemble GPU kernels (it must end in tessera-lower-to-nvvm)"
        )));
    }
    let plan = launch_plan(&lowered).map_err(error)?;
    Ok((plan, steps))
}
