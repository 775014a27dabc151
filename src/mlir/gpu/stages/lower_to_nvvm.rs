//! `tessera-lower-to-nvvm{chip=sm_90}`: the kernels of the `gpu.module` become NVVM and then
//! PTX for `chip` (`gpu-module-to-binary`, a `gpu.binary` holding the PTX text, which needs
//! no CUDA toolkit). Inside kernels, linalg ops become loops and f32 transcendentals the same
//! polynomials as on the CPU (`math-polynomial-approximation`: one numerics on both targets,
//! and none of libdevice's calls for them); what the NVVM conversion still sends to libdevice
//! (`fabs`, `floor`, `sqrt`, ... as `__nv_*` calls) is resolved by linking libdevice, found on
//! this machine (src/mlir/gpu/toolkit.rs). PTX that would still call a function it does not
//! define is an error here, not at load time. The host side (allocations, views,
//! `gpu.launch_func`) stays as it is, for the runtime to read. Precondition: the module is
//! mapped to the GPU (`tessera-map-to-gpu`).

use crate::diag::Diagnostic;
use crate::mlir::bridge::walk::walk;
use crate::mlir::gpu::ptx::{kernel_ptx, unresolved_functions};
use crate::mlir::gpu::{toolkit, DEFAULT_CHIP};
use crate::mlir::pipeline::stages::{
    expect_mlir, run_upstream, stage_error, OptionKind, Program, Stage, StageEnv, StageOption,
    StageOptions, CANONICALIZE,
};

/// Lowering kernels to NVVM and PTX as a stage.
pub struct LowerToNvvm;

/// Kernels' structured ops to loops, views to pointer arithmetic, math to polynomials, loops
/// to branches.
const KERNEL_BODIES: &str = "gpu.module(convert-linalg-to-loops,convert-vector-to-scf{full-unroll},expand-strided-metadata,lower-affine,math-polynomial-approximation,convert-scf-to-cf)";

/// bf16 conversions as integer arithmetic, which every chip has (NVPTX converts bf16 in
/// hardware only from sm_80 on).
const BF16_AS_INTEGERS: &str = "gpu.module(arith-expand{include-bf16=true})";

/// The NVVM conversion, and what it leaves (`math.fma` and the like) to LLVM intrinsics.
const TO_NVVM: &str =
    "gpu.module(convert-gpu-to-nvvm,convert-math-to-llvm,reconcile-unrealized-casts)";

impl Stage for LowerToNvvm {
    fn name(&self) -> &'static str {
        "tessera-lower-to-nvvm"
    }

    fn summary(&self) -> &'static str {
        "Lower the GPU kernels to NVVM and assemble them as PTX for a chip (a gpu.binary). Input: MLIR mapped to the GPU."
    }

    fn options(&self) -> &'static [StageOption] {
        &[StageOption {
            name: "chip",
            doc: "the NVIDIA chip to generate PTX for (sm_80, sm_90, ...); default: sm_90",
            kind: OptionKind::GpuChip,
        }]
    }

    fn run<'c>(
        &self,
        program: Program<'c>,
        env: &StageEnv<'c, '_>,
        options: &StageOptions,
    ) -> Result<Program<'c>, Vec<Diagnostic>> {
        let mut module = expect_mlir(program, self.name())?;
        let mut unmapped = None;
        let mut bf16 = false;
        walk(&module, |op| {
            let in_kernel = op.name().starts_with("gpu.") || {
                let mut parent = op.parent();
                let mut inside = false;
                while let Some(p) = parent {
                    inside |= p.name() == "gpu.module";
                    parent = p.parent();
                }
                inside
            };
            bf16 |= in_kernel && op.touches_bf16();
            let works = op.name().starts_with("linalg.") || op.name().starts_with("scf.");
            if unmapped.is_none() && works && !in_kernel {
                unmapped = Some(format!("'{}' at {}", op.name(), op.location()));
            }
        });
        if let Some(op) = unmapped {
            return Err(stage_error(
                self.name(),
                format!("needs the work mapped to the GPU: run tessera-map-to-gpu first ({op} is outside every kernel)"),
            ));
        }
        let chip = options.0.get("chip").map_or(DEFAULT_CHIP, String::as_str);
        let libdevice = toolkit::libdevice();
        let link = libdevice
            .as_ref()
            .map(|path| format!(" l={}", path.display()))
            .unwrap_or_default();
        let mut passes = KERNEL_BODIES.to_string();
        if bf16 {
            passes = format!("{passes},{BF16_AS_INTEGERS}");
        }
        let passes = format!(
            "{passes},nvvm-attach-target{{chip={chip} O=3{link}}},{TO_NVVM},gpu.module({CANONICALIZE},cse),gpu-module-to-binary{{format=isa}}"
        );
        run_upstream(env, &mut module, &passes, self.name())?;
        if let Some(ptx) = kernel_ptx(&module) {
            let unresolved = unresolved_functions(&ptx);
            if !unresolved.is_empty() {
                let cause = match libdevice {
                    Some(path) => format!("they are not in {}", path.display()),
                    None => toolkit::missing("libdevice"),
                };
                return Err(stage_error(
                    self.name(),
                    format!("the kernels call {} and {cause}", unresolved.join(", ")),
                ));
            }
        }
        Ok(Program::Mlir(module))
    }
}
