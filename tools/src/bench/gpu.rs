//! `tessera-bench --target=cuda`: the suite on GPU 0. Each workload and mode is compiled to
//! PTX and a launch plan, called once (the first call: allocation, constants, the copies),
//! then timed two ways: the host's time of a whole call (inputs, already in the device's byte
//! layout in page-locked memory, copied in, kernels, results copied out: one CUDA graph), and
//! the device's time of its kernels alone by CUDA events, per call (around the kernels' graph)
//! and per kernel. The device's limits are measured in the same run by the same tool: its FP32 FMA
//! peak from a generated kernel of independent FMA chains, and its copy bandwidth from a
//! device-to-device copy far larger than its L2 cache. Each result is also given as a
//! fraction of the limit that binds it (roofline on the device time).

use crate::bench::measure::{time_calls, Budget, Latency};
use crate::bench::report::{number, quote};
use crate::bench::workloads::{Bound, Workload};
use crate::bench::{Failure, Mode};
use std::fmt::Write as _;
use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};
use tessera::diag::render_all;
use tessera::mlir::gpu::runtime::device::Device;
use tessera::mlir::gpu::runtime::executable::GpuExecutable;
use tessera::mlir::gpu::GPU_CHIPS;
use tessera::mlir::pipeline::runner::StepTime;
use tessera::mlir::pipeline::stages::table_names;
use tessera::mlir::pipeline::target::Target;
use tessera::mlir::pipeline::Pipeline;
use tessera::mlir::MlirContext;
use tessera::source::SourceFile;
use tessera::transforms::decompose::decompose;

/// The name of the generated FMA-peak kernel.
pub const FMA_KERNEL: &str = "tessera_fma_peak";

/// Independent FMA chains per thread: enough to cover the FMA latency (4 cycles) with a
/// few warps per scheduler, few enough to stay in registers.
const CHAINS: usize = 8;

/// Times each chain is unrolled per loop iteration.
const UNROLL: usize = 4;

/// Loop iterations of the FMA-peak kernel.
const FMA_ITERATIONS: u32 = 4096;

/// Blocks per multiprocessor and threads per block of the FMA-peak kernel: a full
/// multiprocessor (2048 threads) on every chip since sm_80.
const FMA_BLOCKS_PER_SM: u32 = 8;
const FMA_THREADS: u32 = 256;

/// The chip the FMA-peak PTX is written for (the driver compiles it for the device's own):
/// the oldest with tensor-core-era FP32 throughput that tessera's tests assemble for.
pub const OLDEST_CHIP: &str = "sm_80";

/// Bytes of the device copy: 1 GiB, far beyond any L2 cache.
const COPY_BYTES: usize = 1 << 30;

/// The device and what it can do, measured in this run.
#[derive(Clone, Debug)]
pub struct GpuLimits {
    /// The device's name.
    pub name: String,
    /// Its chip (`sm_90`).
    pub chip: String,
    /// The driver's version.
    pub driver: String,
    /// Its multiprocessors.
    pub multiprocessors: u32,
    /// FP32 FMA throughput of the whole device, GFLOP/s.
    pub fma_gflops: f64,
    /// Bytes read plus written per second by a device-to-device copy, GB/s.
    pub copy_gbps: f64,
}

/// One workload in one mode on the GPU.
#[derive(Clone, Debug)]
pub struct GpuMeasurement {
    /// The workload's id.
    pub workload: String,
    /// The mode.
    pub mode: Mode,
    /// Every compile step.
    pub compile: Vec<StepTime>,
    /// The first call (allocations, constants, copies, kernels).
    pub first_call: Duration,
    /// A whole call as the host sees it, copies included.
    pub host: Latency,
    /// The kernels of a call on the device (CUDA events), median seconds.
    pub device_median: f64,
    /// Each launch: its kernel, the `.tsr` op it came from, its median device seconds.
    pub launches: Vec<(String, String, f64)>,
    /// Arithmetic operations per call.
    pub flops: u64,
    /// Bytes of the inputs and outputs.
    pub bytes: u64,
    /// What bounds the workload.
    pub bound: Bound,
}

impl GpuMeasurement {
    /// The least device time the limits allow, and which limit it is.
    pub fn floor(&self, limits: &GpuLimits) -> (f64, &'static str) {
        let compute = self.flops as f64 / (limits.fma_gflops * 1e9);
        let memory = self.bytes as f64 / (limits.copy_gbps * 1e9);
        if compute >= memory {
            (compute, "fma")
        } else {
            (memory, "copy")
        }
    }

    /// The fraction of the binding limit the device time reaches.
    pub fn fraction_of_limit(&self, limits: &GpuLimits) -> f64 {
        self.floor(limits).0 / self.device_median.max(f64::MIN_POSITIVE)
    }
}

/// The PTX of the FMA-peak kernel for `chip`: each thread runs [`CHAINS`] independent chains
/// of `x = x * y + z`, [`UNROLL`] times per iteration, for `iterations` iterations (a
/// parameter), and stores their sum so that nothing is dead.
pub fn fma_peak_ptx(chip: &str) -> String {
    let mut body = String::new();
    for _ in 0..UNROLL {
        for c in 0..CHAINS {
            let _ = writeln!(body, "\tfma.rn.f32 \t%a{c}, %a{c}, %y, %z;");
        }
    }
    let mut init = String::new();
    let mut sum = String::from("\tmov.f32 \t%s, %a0;\n");
    for c in 0..CHAINS {
        let _ = writeln!(
            init,
            "\tadd.f32 \t%a{c}, %x, 0f{:08X};",
            (c as f32).to_bits()
        );
        if c > 0 {
            let _ = writeln!(sum, "\tadd.f32 \t%s, %s, %a{c};");
        }
    }
    format!(
        "//\n// tessera-bench's FP32 FMA-peak kernel\n//\n.version 7.8\n.target {chip}\n.address_size 64\n\n\
.visible .entry {FMA_KERNEL}(\n\t.param .u64 out,\n\t.param .u32 iterations\n)\n{{\n\
\t.reg .pred \t%p;\n\t.reg .b32 \t%i, %n, %thread, %block, %width;\n\t.reg .b64 \t%o, %off;\n\
\t.reg .f32 \t%x, %y, %z, %s, %a<{CHAINS}>;\n\n\
\tld.param.u64 \t%o, [out];\n\tld.param.u32 \t%n, [iterations];\n\
\tmov.u32 \t%thread, %tid.x;\n\tmov.u32 \t%block, %ctaid.x;\n\tmov.u32 \t%width, %ntid.x;\n\
\tmad.lo.u32 \t%i, %block, %width, %thread;\n\tcvt.rn.f32.u32 \t%x, %i;\n\
\tmov.f32 \t%y, 0f3F7FFFFF;\n\tmov.f32 \t%z, 0f33800000;\n{init}\
$L_loop:\n{body}\tsub.u32 \t%n, %n, 1;\n\tsetp.ne.u32 \t%p, %n, 0;\n\t@%p bra \t$L_loop;\n\n{sum}\
\tcvta.to.global.u64 \t%o, %o;\n\tmul.wide.u32 \t%off, %i, 4;\n\tadd.s64 \t%o, %o, %off;\n\
\tst.global.f32 \t[%o], %s;\n\tret;\n}}\n"
    )
}

/// FLOPs of one launch of the FMA-peak kernel on `multiprocessors`.
fn fma_flops(multiprocessors: u32) -> f64 {
    let threads = f64::from(multiprocessors * FMA_BLOCKS_PER_SM * FMA_THREADS);
    threads * f64::from(FMA_ITERATIONS) * (CHAINS * UNROLL) as f64 * 2.0
}

/// The best of `runs` timings of `work` by CUDA events on `device`, in seconds.
fn best_device_time(
    device: &Device,
    runs: usize,
    mut work: impl FnMut() -> Result<(), String>,
) -> Result<f64, String> {
    work()?;
    device.synchronize()?;
    let mut best = f64::INFINITY;
    for _ in 0..runs {
        let start = device.record()?;
        work()?;
        let end = device.record()?;
        device.synchronize()?;
        best = best.min(device.elapsed(&start, &end)?);
    }
    Ok(best)
}

/// Measures the device's limits (and reads what it is) on `device`.
pub fn measure_limits(device: &Device) -> Result<GpuLimits, String> {
    let (name, chip, driver) = device.describe()?;
    let multiprocessors = device.multiprocessors()?;
    // The PTX is for the oldest chip tessera targets; the driver compiles it for this one.
    let kernels = device.load(&fma_peak_ptx(OLDEST_CHIP), [FMA_KERNEL])?;
    let blocks = multiprocessors * FMA_BLOCKS_PER_SM;
    let out = device.allocate((blocks * FMA_THREADS) as usize * 4)?;
    let mut parameters = vec![
        out.address().to_le_bytes().to_vec(),
        FMA_ITERATIONS.to_le_bytes().to_vec(),
    ];
    let fma_seconds = best_device_time(device, 5, || {
        device.launch(
            &kernels,
            FMA_KERNEL,
            [blocks, 1, 1],
            [FMA_THREADS, 1, 1],
            &mut parameters,
        )
    })?;
    let source = device.allocate(COPY_BYTES)?;
    let target = device.allocate(COPY_BYTES)?;
    let copy_seconds = best_device_time(device, 5, || device.copy(&target, &source, COPY_BYTES))?;
    Ok(GpuLimits {
        name,
        chip,
        driver,
        multiprocessors,
        fma_gflops: fma_flops(multiprocessors) / fma_seconds / 1e9,
        copy_gbps: 2.0 * COPY_BYTES as f64 / copy_seconds / 1e9,
    })
}

/// A workload's model, verified, and the index of its timed function.
pub struct Loaded {
    /// Its source.
    pub file: SourceFile,
    /// The verified module.
    pub module: tessera::ir::Module,
    /// The timed function.
    pub entry: usize,
}

/// `workload` through the front end; its diagnostics, rendered, when it is not valid.
pub fn load_workload(workload: &Workload) -> Result<Loaded, Failure> {
    let (file, module) = workload.load();
    let module = module.map_err(|d| Failure::Diagnostics(render_all(&d, &file)))?;
    let entry = crate::bench::entry_index(workload, &module)?;
    Ok(Loaded {
        file,
        module,
        entry,
    })
}

/// Compiles and times `workload` (`loaded`) in `mode` for `limits`' chip, with `time` of timed calls;
/// with `save`, writes its inputs and its first call's outputs there as `.npy`.
pub fn measure_workload(
    workload: &Workload,
    loaded: &Loaded,
    mode: Mode,
    limits: &GpuLimits,
    time: Duration,
    save: Option<&Path>,
) -> Result<GpuMeasurement, Failure> {
    let Loaded {
        file,
        module,
        entry,
    } = loaded;
    let func = &module.funcs[*entry];
    let flops = decompose(module)
        .map_err(|e| format!("{}: {e}", workload.path))?
        .flops(*entry);
    let mut pipeline = Pipeline::preset_for(Target::Cuda, mode.level, mode.fusion, None);
    if table_names(GPU_CHIPS).any(|c| c == limits.chip) {
        pipeline.set_option("tessera-lower-to-nvvm", "chip", &limits.chip);
    }
    let context = MlirContext::new();
    let (plan, compile) = tessera::mlir::gpu::compile::compile(&context, module, file, &pipeline)
        .map_err(|d| Failure::Diagnostics(render_all(&d, file)))?;
    let signatures = tessera::exec::signature::Signature::of_module(module);
    let mut executable = GpuExecutable::load(plan, signatures).map_err(|e| e.to_string())?;
    let inputs = crate::bench::random_inputs(func);
    let bytes = inputs
        .iter()
        .map(|t| t.ty.clone())
        .chain(func.result_types.iter().cloned())
        .map(|ty| {
            ty.num_elements().unwrap_or(0) * tessera::exec::bytes::element_bytes(ty.element) as u64
        })
        .sum();
    let start = Instant::now();
    let outputs = executable
        .call(&func.name, &inputs)
        .map_err(|e| e.to_string())?;
    let first_call = start.elapsed();
    if let Some(dir) = save {
        crate::bench::save_tensors(dir, &inputs, &outputs)?;
    }
    // The host's time of a call whose inputs are already in the device's byte layout in
    // page-locked memory, as a serving loop keeps them: copies in, kernels, copies out.
    executable
        .stage(&func.name, &inputs)
        .map_err(|e| e.to_string())?;
    let host = time_calls(
        Budget {
            time,
            min_runs: 3,
            max_runs: 100_000,
        },
        || executable.run_staged(&func.name),
    )
    .map_err(|e| e.to_string())?;
    let runs = host.runs.clamp(3, 1000);
    let times = executable
        .time_kernels(&func.name, &inputs, runs)
        .map_err(|e| e.to_string())?;
    let launches = executable
        .launches(&func.name)
        .into_iter()
        .zip(&times.launches)
        .map(|((kernel, origin), seconds)| (kernel, origin, median(seconds)))
        .collect();
    Ok(GpuMeasurement {
        workload: workload.id.clone(),
        mode,
        compile,
        first_call,
        host,
        device_median: median(&times.calls),
        launches,
        flops,
        bytes,
        bound: workload.bound,
    })
}

/// The median of `values` (0 for none).
fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted.get(sorted.len() / 2).copied().unwrap_or(0.0)
}

/// The table of a GPU run: the device and its limits, then per workload a line per mode and
/// its kernels.
pub fn table(workloads: &[Workload], results: &[GpuMeasurement], limits: &GpuLimits) -> String {
    let mut text = format!(
        "device: {} ({}, driver {}, {} multiprocessors); FP32 FMA peak {:.1} GFLOP/s, device copy {:.1} GB/s\n",
        limits.name, limits.chip, limits.driver, limits.multiprocessors, limits.fma_gflops, limits.copy_gbps
    );
    for workload in workloads {
        let _ = writeln!(text, "\n{} — {}", workload.id, workload.title);
        let _ = writeln!(
            text,
            "  {:<18} {:>12} {:>12} {:>11} {:>11} {:>12} {:>12} {:>9}",
            "mode", "device", "host call", "compile", "first call", "rate", "of limit", "launches"
        );
        for m in results.iter().filter(|m| m.workload == workload.id) {
            let rate = match m.bound {
                Bound::Compute => format!("{:.1} GF/s", m.flops as f64 / m.device_median / 1e9),
                Bound::Memory => format!("{:.1} GB/s", m.bytes as f64 / m.device_median / 1e9),
            };
            let (_, limit) = m.floor(limits);
            let compile: Duration = m.compile.iter().map(|s| s.time).sum();
            let _ = writeln!(
                text,
                "  {:<18} {:>9.1} µs {:>9.1} µs {:>8.1} ms {:>8.2} ms {:>12} {:>6.1}% {:<4} {:>9}",
                m.mode.label(),
                m.device_median * 1e6,
                m.host.median.as_secs_f64() * 1e6,
                compile.as_secs_f64() * 1e3,
                m.first_call.as_secs_f64() * 1e3,
                rate,
                100.0 * m.fraction_of_limit(limits),
                limit,
                m.launches.len()
            );
            for (kernel, origin, seconds) in &m.launches {
                let _ = writeln!(
                    text,
                    "      {:>9.1} µs  {kernel}  ({origin})",
                    seconds * 1e6
                );
            }
        }
    }
    text
}

/// The JSON of a GPU run: the device, its limits and one record per workload and mode.
pub fn json(results: &[GpuMeasurement], limits: &GpuLimits, time_per_mode_s: f64) -> String {
    let records: Vec<String> = results
        .iter()
        .map(|m| {
            let launches: Vec<String> = m
                .launches
                .iter()
                .map(|(kernel, origin, s)| {
                    format!(
                        "{{\"kernel\": {}, \"origin\": {}, \"device_median_us\": {}}}",
                        quote(kernel),
                        quote(origin),
                        number(s * 1e6)
                    )
                })
                .collect();
            let compile: f64 = m.compile.iter().map(|s| s.time.as_secs_f64()).sum();
            format!(
                "    {{\"workload\": {}, \"mode\": {}, \"device_median_us\": {}, \"host_call_median_us\": {}, \"host_call_p10_us\": {}, \"host_call_p90_us\": {}, \"runs\": {}, \"first_call_ms\": {}, \"compile_ms\": {}, \"flops\": {}, \"bytes\": {}, \"limit\": {}, \"fraction_of_limit\": {}, \"launches\": [{}]}}",
                quote(&m.workload),
                quote(&m.mode.label()),
                number(m.device_median * 1e6),
                number(m.host.median.as_secs_f64() * 1e6),
                number(m.host.p10.as_secs_f64() * 1e6),
                number(m.host.p90.as_secs_f64() * 1e6),
                m.host.runs,
                number(m.first_call.as_secs_f64() * 1e3),
                number(compile * 1e3),
                m.flops,
                m.bytes,
                quote(m.floor(limits).1),
                number(m.fraction_of_limit(limits)),
                launches.join(", ")
            )
        })
        .collect();
    format!(
        "{{\n  \"target\": \"cuda\",\n  \"device\": {{\"name\": {}, \"chip\": {}, \"driver\": {}, \"multiprocessors\": {}}},\n  \"limits\": {{\"fp32_fma_gflops\": {}, \"device_copy_gbps\": {}}},\n  \"time_per_mode_s\": {},\n  \"results\": [\n{}\n  ]\n}}\n",
        quote(&limits.name),
        quote(&limits.chip),
        quote(&limits.driver),
        limits.multiprocessors,
        number(limits.fma_gflops),
        number(limits.copy_gbps),
        number(time_per_mode_s),
        records.join(",\n")
    )
}

/// Where a GPU run writes besides its table.
pub struct Files<'p> {
    /// The JSON of every result.
    pub json: Option<&'p Path>,
    /// A folder for each workload's inputs and the outputs of its first mode's first call
    /// (`<workload>/in<i>.npy`, `out<i>.npy`), for checking other systems on the same data.
    pub save_io: Option<&'p Path>,
}

/// Runs the GPU suite: limits, then each workload in each mode; the table to `out`.
pub fn bench(
    workloads: &[Workload],
    modes: &[Mode],
    time: Duration,
    files: Files<'_>,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<(), Failure> {
    // Every model is checked before anything reaches the device.
    let loaded = workloads
        .iter()
        .map(load_workload)
        .collect::<Result<Vec<_>, _>>()?;
    let device = Device::open()?;
    let _ = writeln!(err, "measuring the device's limits");
    let limits = measure_limits(&device)?;
    drop(device);
    let mut results = Vec::new();
    for (workload, loaded) in workloads.iter().zip(&loaded) {
        for (index, &mode) in modes.iter().enumerate() {
            let _ = writeln!(err, "{} {}", workload.id, mode.label());
            let save = files
                .save_io
                .filter(|_| index == 0)
                .map(|dir| dir.join(&workload.id));
            results.push(measure_workload(
                workload,
                loaded,
                mode,
                &limits,
                time,
                save.as_deref(),
            )?);
        }
    }
    out.write_all(table(workloads, &results, &limits).as_bytes())
        .map_err(|e| format!("cannot write the table: {e}"))?;
    if let Some(path) = files.json {
        std::fs::write(path, json(&results, &limits, time.as_secs_f64()))
            .map_err(|e| format!("cannot write '{}': {e}", path.display()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> GpuLimits {
        GpuLimits {
            name: "NVIDIA H200".into(),
            chip: "sm_90".into(),
            driver: "13.0".into(),
            multiprocessors: 132,
            fma_gflops: 60_000.0,
            copy_gbps: 4_000.0,
        }
    }

    fn measurement(flops: u64, bytes: u64, device_median: f64) -> GpuMeasurement {
        GpuMeasurement {
            workload: "w3".into(),
            mode: Mode {
                level: 3,
                fusion: true,
            },
            compile: vec![StepTime {
                name: "tessera-map-to-gpu".into(),
                time: Duration::from_millis(12),
            }],
            first_call: Duration::from_millis(3),
            host: Latency {
                runs: 10,
                median: Duration::from_micros(900),
                p10: Duration::from_micros(850),
                p90: Duration::from_micros(950),
            },
            device_median,
            launches: vec![
                ("f_kernel".into(), "w3.tsr:2:8".into(), 2e-6),
                (
                    "f_kernel_0".into(),
                    "w3.tsr:2:8".into(),
                    device_median - 2e-6,
                ),
            ],
            flops,
            bytes,
            bound: Bound::Compute,
        }
    }

    #[test]
    fn the_fma_peak_counts_every_fma_of_every_thread() {
        // 132 SMs x 8 blocks x 256 threads, 4096 iterations of 32 FMAs, 2 flops each.
        let expected = 132.0 * 8.0 * 256.0 * 4096.0 * 32.0 * 2.0;
        assert_eq!(fma_flops(132), expected);
    }

    #[test]
    fn results_are_fractions_of_the_limit_that_binds() {
        let limits = limits();
        // 2 GFLOP in 50 µs is 40 TFLOP/s: 2/3 of a 60 TFLOP/s peak; its 12 MB move in 3 µs.
        let compute = measurement(2_000_000_000, 12_000_000, 50e-6);
        assert_eq!(compute.floor(&limits).1, "fma");
        assert!((compute.fraction_of_limit(&limits) - 2.0 / 3.0).abs() < 1e-9);
        // 400 MB at 4 TB/s take 100 µs; done in 200 µs: half the copy bandwidth.
        let memory = measurement(1_000_000, 400_000_000, 200e-6);
        assert_eq!(memory.floor(&limits).1, "copy");
        assert!((memory.fraction_of_limit(&limits) - 0.5).abs() < 1e-9);
    }

    #[test]
    fn the_table_and_json_name_the_device_and_every_launch() {
        let limits = limits();
        let m = measurement(2_000_000_000, 12_000_000, 50e-6);
        let workload = crate::bench::workloads::builtin("w3").unwrap();
        let table = table(&[workload], std::slice::from_ref(&m), &limits);
        assert!(
            table.starts_with("device: NVIDIA H200 (sm_90, driver 13.0, 132 multiprocessors)"),
            "{table}"
        );
        assert!(table.contains("f_kernel_0  (w3.tsr:2:8)"), "{table}");
        assert!(table.contains("66.7% fma"), "{table}");
        let json = json(&[m], &limits, 0.5);
        for field in [
            "\"name\": \"NVIDIA H200\"",
            "\"chip\": \"sm_90\"",
            "\"driver\": \"13.0\"",
            "\"fp32_fma_gflops\": 60000",
            "\"device_median_us\": 50",
            "\"host_call_median_us\": 900",
            "\"kernel\": \"f_kernel_0\"",
            "\"limit\": \"fma\"",
        ] {
            assert!(json.contains(field), "{field} missing from {json}");
        }
        assert_eq!(json.matches('{').count(), json.matches('}').count());
        assert_eq!(json.matches('[').count(), json.matches(']').count());
    }
}
