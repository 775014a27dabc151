//! The machine's limits, measured by the same tool in the same run: the FMA peak of one core
//! (a JIT-compiled loop of independent vector FMAs) and the copy bandwidth (a JIT-compiled
//! vector copy of a buffer far larger than the caches). Every result is also reported as a
//! fraction of the limit that binds it.

use crate::bench::measure::{time_calls, Budget};
use std::time::Duration;
use tessera::exec::signature::Signature;
use tessera::mlir::cpu::cpu_model::CpuModel;
use tessera::mlir::cpu::runtime::jit::{Jit, LlvmOptions};
use tessera::mlir::cpu::runtime::memref::HostBuffer;
use tessera::mlir::pipeline::runner::{run_pipeline, Instrumentation};
use tessera::mlir::pipeline::stages::{Program, StageEnv};
use tessera::mlir::pipeline::Pipeline;
use tessera::mlir::MlirContext;
use tessera::source::SourceFile;
use tessera::types::{ElementType, TensorType};

/// What the machine can do on one core.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Limits {
    /// Floating-point operations per second of vector FMAs (f32), in GFLOP/s.
    pub fma_gflops: f64,
    /// Bytes read plus bytes written per second by a vector copy, in GB/s.
    pub copy_gbps: f64,
}

/// Independent accumulators in the FMA loop: enough to cover the FMA latency on both FMA
/// ports (4 cycles x 2), few enough to stay in registers (16 on AVX2, 32 on AVX-512).
const ACCUMULATORS: usize = 12;

/// FMA steps per call of the peak loop.
const FMA_STEPS: usize = 1 << 20;

/// Floats copied per call of the copy loop: 64 MiB, far beyond the last-level cache.
const COPY_FLOATS: usize = 1 << 24;

/// The host's vector width in f32 lanes (the vector unit the strategy sizes tiles for).
pub fn lanes() -> usize {
    CpuModel::host().lanes as usize
}

/// Measures both limits, each for about `time`.
pub fn measure(time: Duration) -> Result<Limits, String> {
    let lanes = lanes();
    let budget = Budget {
        time,
        min_runs: 3,
        max_runs: 1000,
    };
    let fma = compile_kernel(&fma_kernel(lanes), "fma_peak", lanes, lanes)?;
    let flops = (2 * lanes * ACCUMULATORS * FMA_STEPS) as f64;
    let fma_time = fma.time(budget)?;
    let copy = compile_kernel(&copy_kernel(lanes), "copy", COPY_FLOATS, COPY_FLOATS)?;
    let bytes = (2 * 4 * COPY_FLOATS) as f64;
    let copy_time = copy.time(budget)?;
    Ok(Limits {
        fma_gflops: flops / fma_time.as_secs_f64() / 1e9,
        copy_gbps: bytes / copy_time.as_secs_f64() / 1e9,
    })
}

/// A compiled kernel `f(in: memref<N x f32>, out: memref<M x f32>)` and its buffers.
struct Kernel {
    jit: Jit,
    name: String,
    input: Vec<HostBuffer>,
    output: Vec<HostBuffer>,
}

impl Kernel {
    /// The median time of one call.
    fn time(mut self, budget: Budget) -> Result<Duration, String> {
        let latency = time_calls(budget, || {
            self.jit
                .call_buffers(&self.name, &self.input, &mut self.output)
                .map_err(|e| e.to_string())
        })?;
        Ok(latency.median)
    }
}

/// Lowers MLIR `text` with tessera-lower-to-llvm and compiles function `name`.
fn compile_kernel(text: &str, name: &str, inputs: usize, outputs: usize) -> Result<Kernel, String> {
    let context = MlirContext::new();
    let module = context
        .parse_module(text)
        .map_err(|e| format!("the {name} kernel does not parse: {e:?}"))?;
    let file = SourceFile::new(format!("{name}.mlir"), text.to_string());
    let env = StageEnv {
        context: &context,
        file: &file,
    };
    let pipeline =
        Pipeline::parse("builtin.module(tessera-lower-to-llvm)").map_err(|e| e.message)?;
    let (lowered, _) = run_pipeline(
        Program::Mlir(module),
        &pipeline,
        &env,
        &Instrumentation::default(),
        &mut std::io::sink(),
    )
    .map_err(|f| format!("the {name} kernel does not lower: {:?}", f.diagnostics))?;
    let Program::Mlir(lowered) = lowered else {
        return Err(format!("the {name} kernel did not stay MLIR"));
    };
    let vector = |n: usize| TensorType::new(vec![n as u64], ElementType::F32);
    let signature = Signature {
        name: name.to_string(),
        params: vec![("input".to_string(), vector(inputs))],
        results: vec![vector(outputs)],
    };
    let jit = Jit::new(&lowered, vec![signature], LlvmOptions::DEFAULT)
        .ok_or_else(|| format!("the {name} kernel does not compile"))?;
    let buffer = |n: usize| {
        HostBuffer::zeroed(&vector(n)).ok_or_else(|| format!("cannot allocate {n} floats"))
    };
    Ok(Kernel {
        input: vec![buffer(inputs)?],
        output: vec![buffer(outputs)?],
        jit,
        name: name.to_string(),
    })
}

/// `ACCUMULATORS` chains of `acc = acc * b + c` on `lanes`-wide vectors, `FMA_STEPS` steps;
/// the chains start apart (so that no two are the same computation) and are summed into the
/// output (so that none is dead).
fn fma_kernel(lanes: usize) -> String {
    let v = format!("vector<{lanes}xf32>");
    let accs: Vec<String> = (0..ACCUMULATORS).map(|i| format!("%x{i}")).collect();
    let mut text = format!(
        "func.func @fma_peak(%seed: memref<{lanes}xf32>, %out: memref<{lanes}xf32>) attributes {{llvm.emit_c_interface}} {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %steps = arith.constant {FMA_STEPS} : index
  %b = arith.constant dense<0.999> : {v}
  %c = arith.constant dense<0.001> : {v}
  %a = vector.load %seed[%c0] : memref<{lanes}xf32>, {v}
"
    );
    for i in 0..ACCUMULATORS {
        text += &format!(
            "  %o{i} = arith.constant dense<{i}.0> : {v}\n  %i{i} = arith.addf %a, %o{i} : {v}\n"
        );
    }
    let inits: Vec<String> = (0..ACCUMULATORS)
        .map(|i| format!("{} = %i{i}", accs[i]))
        .collect();
    let types = vec![v.clone(); ACCUMULATORS].join(", ");
    text += &format!(
        "  %r:{ACCUMULATORS} = scf.for %k = %c0 to %steps step %c1 iter_args({}) -> ({types}) {{\n",
        inits.join(", ")
    );
    for (i, acc) in accs.iter().enumerate() {
        text += &format!("    %y{i} = vector.fma {acc}, %b, %c : {v}\n");
    }
    let ys: Vec<String> = (0..ACCUMULATORS).map(|i| format!("%y{i}")).collect();
    text += &format!("    scf.yield {} : {types}\n  }}\n", ys.join(", "));
    text += "  %s0 = arith.addf %r#0, %r#1 : ".to_string().as_str();
    text += &format!("{v}\n");
    for i in 2..ACCUMULATORS {
        text += &format!("  %s{} = arith.addf %s{}, %r#{i} : {v}\n", i - 1, i - 2);
    }
    text += &format!(
        "  vector.store %s{}, %out[%c0] : memref<{lanes}xf32>, {v}\n  return\n}}\n",
        ACCUMULATORS - 2
    );
    text
}

/// A copy of `COPY_FLOATS` floats, `lanes` at a time.
fn copy_kernel(lanes: usize) -> String {
    let v = format!("vector<{lanes}xf32>");
    let m = format!("memref<{COPY_FLOATS}xf32>");
    format!(
        "func.func @copy(%src: {m}, %dst: {m}) attributes {{llvm.emit_c_interface}} {{
  %c0 = arith.constant 0 : index
  %step = arith.constant {lanes} : index
  %n = arith.constant {COPY_FLOATS} : index
  scf.for %i = %c0 to %n step %step {{
    %x = vector.load %src[%i] : {m}, {v}
    vector.store %x, %dst[%i] : {m}, {v}
  }}
  return
}}
"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernels_parse_lower_and_compile() {
        for lanes in [4, 8, 16] {
            assert!(compile_kernel(&fma_kernel(lanes), "fma_peak", lanes, lanes).is_ok());
        }
        assert!(compile_kernel(&copy_kernel(8), "copy", COPY_FLOATS, COPY_FLOATS).is_ok());
    }
}
