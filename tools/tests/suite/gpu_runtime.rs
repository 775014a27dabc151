//! The CUDA target's runtime side. What needs no GPU runs everywhere: the launch plan read
//! from a lowered module (buffers, views, launches, the memref descriptors a kernel takes) and
//! the error of `tessera-run --target=cuda` on a machine without the driver. What needs one
//! (every model at every preset on the GPU, against the reference interpreter) reports itself
//! skipped, with the reason, where no CUDA driver is present.

use crate::common::{relative, root, tsr_files};
use std::io::Write;
use std::process::Command;
use tessera::exec::compare::{compare, Tolerance};
use tessera::exec::interpret::interpret;
use tessera::exec::random::random_inputs;
use tessera::exec::signature::Signature;
use tessera::frontend::{decode, load};
use tessera::ir::Module;
use tessera::mlir::gpu::compile::compile;
use tessera::mlir::gpu::launch_plan::{Argument, Buffer, LaunchPlan};
use tessera::mlir::gpu::runtime::device::{driver_present, NO_DRIVER};
use tessera::mlir::gpu::runtime::executable::GpuExecutable;
use tessera::mlir::pipeline::{Pipeline, Target};
use tessera::mlir::MlirContext;
use tessera::source::SourceFile;
use tessera_tools::registry;

/// `text` (a model named `name`) compiled for the GPU at `level`, and its launch plan.
fn plan(name: &str, text: &str, level: u8, fusion: bool) -> (Module, LaunchPlan) {
    let file = SourceFile::new(name, text);
    let module = load(&file, 0..text.len(), &registry()).expect("valid model");
    let context = MlirContext::new();
    let pipeline = Pipeline::preset_for(Target::Cuda, level, fusion, None);
    let (plan, _) = compile(&context, &module, &file, &pipeline).expect("compiles for the GPU");
    (module, plan)
}

const LAYER_NORM: &str = "func @norm(%x: tensor<128x256xf32>, %g: tensor<256xf32>, %b: tensor<256xf32>) -> tensor<128x256xf32> {
  %n = nn.layer_norm %x, %g, %b : tensor<128x256xf32>
  return %n : tensor<128x256xf32>
}
";

#[test]
fn a_fused_layer_norm_is_one_launch_over_its_parameters() {
    let (_, plan) = plan("norm.tsr", LAYER_NORM, 1, true);
    assert!(
        plan.ptx.contains(".visible .entry norm_kernel("),
        "{}",
        plan.ptx
    );
    let [function] = plan.functions.as_slice() else {
        panic!("one function: {plan:?}");
    };
    assert_eq!(function.name, "norm");
    // Three inputs and the result's out-parameter, and nothing else: the row sums the group
    // keeps (the mean's and the variance's, each a tile of its own) live in each block's
    // shared memory, not in a buffer of the whole 128 rows.
    assert_eq!(
        function.buffers,
        [
            Buffer::Parameter(0),
            Buffer::Parameter(1),
            Buffer::Parameter(2),
            Buffer::Parameter(3)
        ],
        "{function:?}"
    );
    let [launch] = function.launches.as_slice() else {
        panic!("one launch: {function:?}");
    };
    assert_eq!(launch.kernel, "norm_kernel");
    assert_eq!((launch.grid, launch.block), ([16, 1, 1], [256, 1, 1]));
    assert!(launch.origin.contains("norm.tsr"), "{}", launch.origin);
    // The first argument is the input x, a memref<128x256xf32>: its descriptor is the buffer's
    // address twice, offset 0, sizes 128 and 256, strides 256 and 1.
    let Some(Argument::View(x)) = launch.arguments.first() else {
        panic!("a view first: {launch:?}");
    };
    assert_eq!(function.views[*x].buffer, 0);
    let addresses: Vec<u64> = (0..function.buffers.len() as u64)
        .map(|b| 0x1000 * (b + 1))
        .collect();
    let parameters = launch.parameters(function, &addresses);
    let words: Vec<u64> = parameters[..7]
        .iter()
        .map(|p| u64::from_le_bytes(p.as_slice().try_into().expect("8 bytes")))
        .collect();
    assert_eq!(words, [0x1000, 0x1000, 0, 128, 256, 256, 1]);
}

#[test]
fn unfused_ops_launch_one_after_another_and_constants_come_with_their_bytes() {
    let text = "func @f(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %w = array.constant dense<[[1.0, -2.5, 3.0], [0.5, 0.0, -0.125]]> : tensor<2x3xf32>
  %y = array.mul %x, %w : tensor<2x3xf32>
  %z = array.exp %y : tensor<2x3xf32>
  return %z : tensor<2x3xf32>
}
";
    let (_, plan) = plan("constants.tsr", text, 0, true);
    let function = &plan.functions[0];
    assert!(function.launches.len() >= 2, "{function:?}");
    let bytes: Vec<u8> = [1.0f32, -2.5, 3.0, 0.5, 0.0, -0.125]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    assert!(
        function.buffers.contains(&Buffer::Constant(bytes)),
        "{function:?}"
    );
}

#[test]
fn tessera_run_on_the_gpu_says_when_there_is_no_driver() {
    let out = Command::new(env!("CARGO_BIN_EXE_tessera-run"))
        .args([
            "testdata/models/seed_mlp.tsr",
            "--target=cuda",
            "--compare-reference",
        ])
        .current_dir(root())
        .output()
        .expect("tessera-run starts");
    let stderr = String::from_utf8_lossy(&out.stderr);
    if driver_present() {
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && stdout.contains("PASS"),
            "{stdout}{stderr}"
        );
    } else {
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert_eq!(stderr.trim(), format!("tessera-run: error: {NO_DRIVER}"));
    }
}

#[test]
fn every_model_on_the_gpu_matches_the_reference_interpreter() {
    if !driver_present() {
        // Straight to the terminal: the test harness captures eprintln! of passing tests.
        let _ = writeln!(
            std::io::stderr(),
            "skipped: every_model_on_the_gpu_matches_the_reference_interpreter: {NO_DRIVER}"
        );
        return;
    }
    let registry = registry();
    let context = MlirContext::new();
    let mut failures = Vec::new();
    for path in tsr_files("testdata/models") {
        let name = relative(&path);
        let bytes = std::fs::read(&path).expect("model is readable");
        let (file, _) = decode(&name, &bytes);
        let module = load(&file, 0..file.text().len(), &registry).expect("models are valid");
        for (level, fusion) in [(0, true), (1, true), (2, true), (3, true), (3, false)] {
            let pipeline = Pipeline::preset_for(Target::Cuda, level, fusion, None);
            let (plan, _) = compile(&context, &module, &file, &pipeline)
                .unwrap_or_else(|d| panic!("{name} -O{level} does not compile: {d:?}"));
            let mut executable = GpuExecutable::load(plan, Signature::of_module(&module))
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            for (index, func) in module.funcs.iter().enumerate() {
                let inputs = random_inputs(func, 1000);
                let got = match executable.call(&func.name, &inputs) {
                    Ok(got) => got,
                    Err(e) => {
                        failures.push(format!("{name} -O{level} @{}: {e}", func.name));
                        continue;
                    }
                };
                let want = interpret(&module, index, &inputs).expect("the reference runs");
                for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                    let c = compare(g, w, Tolerance::for_function(&module, index));
                    if !c.pass {
                        failures.push(format!(
                            "{name} -O{level}{} @{} output {i}: max abs {:.3e}",
                            if fusion { "" } else { " --no-fusion" },
                            func.name,
                            c.max_abs
                        ));
                    }
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn the_fma_peak_kernel_assembles_and_counts_its_flops() {
    use tessera_tools::bench::gpu::{fma_peak_ptx, FMA_KERNEL, OLDEST_CHIP};
    for chip in [OLDEST_CHIP, "sm_90"] {
        let ptx = fma_peak_ptx(chip);
        assert!(
            ptx.contains(&format!(".visible .entry {FMA_KERNEL}(")),
            "{ptx}"
        );
        assert!(ptx.contains(&format!(".target {chip}")), "{ptx}");
        // 8 chains unrolled 4 times: 32 FMAs per iteration, and their sum is stored.
        assert_eq!(ptx.matches("fma.rn.f32").count(), 32, "{ptx}");
        assert!(ptx.contains("st.global.f32"), "{ptx}");
        match tessera::mlir::gpu::toolkit::ptxas() {
            Some(_) => tessera::mlir::gpu::ptx::assemble(&ptx, chip)
                .unwrap_or_else(|e| panic!("ptxas rejects the FMA-peak kernel for {chip}: {e}")),
            None => panic!("{}", tessera::mlir::gpu::toolkit::missing("ptxas")),
        }
    }
}

#[test]
fn tessera_bench_on_the_gpu_reports_the_device_and_its_limits() {
    let json = std::env::temp_dir().join(format!("tessera-gpu-bench-{}.json", std::process::id()));
    let out = Command::new(env!("CARGO_BIN_EXE_tessera-bench"))
        .args([
            "--target=cuda",
            "--workload",
            "w1_b1",
            "-O3",
            "--time",
            "0.05",
            "--json",
        ])
        .arg(&json)
        .current_dir(root())
        .output()
        .expect("tessera-bench starts");
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !driver_present() {
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert_eq!(stderr.trim(), format!("tessera-bench: error: {NO_DRIVER}"));
        return;
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(stdout.starts_with("device: "), "{stdout}");
    let text = std::fs::read_to_string(&json).expect("the JSON is written");
    let _ = std::fs::remove_file(&json);
    for field in [
        "\"chip\": \"sm_",
        "\"driver\": ",
        "\"fp32_fma_gflops\": ",
        "\"device_median_us\": ",
        "\"host_call_median_us\": ",
    ] {
        assert!(text.contains(field), "{field} missing: {text}");
    }
}

#[test]
fn tessera_bench_on_the_gpu_checks_the_model_before_the_device() {
    let model = std::env::temp_dir().join(format!("tessera-gpu-bad-{}.tsr", std::process::id()));
    std::fs::write(
        &model,
        "func @f(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {\n  %y = nn.softmax %x\n  return %y : tensor<4x9xf32>\n}\n",
    )
    .expect("the model is written");
    let out = Command::new(env!("CARGO_BIN_EXE_tessera-bench"))
        .arg(&model)
        .arg("--target=cuda")
        .output()
        .expect("tessera-bench starts");
    let _ = std::fs::remove_file(&model);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(":3:15: error: written type (tensor<4x9xf32>) does not match"),
        "{stderr}"
    );
    assert!(!stderr.contains(NO_DRIVER), "{stderr}");
}
