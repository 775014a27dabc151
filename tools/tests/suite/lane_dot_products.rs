//! Matmuls with a narrow N computed as dot products with K in the vector lanes
//! (`tessera-lane-dot-products`): for both vector units' register tiles, fused and unfused,
//! on one thread and three, with K no multiple of the lanes (a masked last step), rows no
//! multiple of the register tile's (a tail of single rows), N from 1 to 12, and B passed in
//! (transposed as the call runs) or constant (transposed at compile time), the JIT's results
//! agree with the reference interpreter (lit-tests/tessera-tile/lane_dot_products.tsr checks
//! that such kernels get the rewrite).

use crate::common::compiled_code_lock;
use tessera::exec::compare::{compare, Tolerance};
use tessera::exec::interpret::interpret;
use tessera::exec::random::random_inputs;
use tessera::frontend::{decode, load};
use tessera::mlir::cpu::compile::{compile, jit_options};
use tessera::mlir::pipeline::Pipeline;
use tessera::mlir::MlirContext;
use tessera_tools::registry;

/// A dense layer (rows x depth by depth x columns, bias, ReLU) whose weights are a parameter,
/// or a constant of distinct values where `constant`.
fn dense(rows: usize, depth: usize, columns: usize, constant: bool) -> String {
    let weights_type = format!("tensor<{depth}x{columns}xf32>");
    let (parameter, definition) = if constant {
        let values: Vec<String> = (0..depth)
            .map(|k| {
                let row: Vec<String> = (0..columns)
                    .map(|n| format!("{:.3}", ((k * 7 + n * 3) % 11) as f64 / 11.0 - 0.5))
                    .collect();
                format!("[{}]", row.join(", "))
            })
            .collect();
        (
            String::new(),
            format!(
                "  %w = array.constant dense<[{}]> : {weights_type}\n",
                values.join(", ")
            ),
        )
    } else {
        (format!(", %w: {weights_type}"), String::new())
    };
    format!(
        "func @f(%x: tensor<{rows}x{depth}xf32>{parameter}, %b: tensor<{columns}xf32>) -> tensor<{rows}x{columns}xf32> {{\n\
         {definition}  %h = nn.dense %x, %w, %b : tensor<{rows}x{columns}xf32>\n  \
         %a = nn.relu %h\n  \
         return %a : tensor<{rows}x{columns}xf32>\n}}\n"
    )
}

/// The cases: (rows, depth, columns, constant weights).
const CASES: [(usize, usize, usize, bool); 6] = [
    (64, 784, 10, false),
    (37, 100, 10, false),
    (40, 72, 12, false),
    (33, 64, 1, false),
    (18, 50, 5, false),
    (5, 40, 3, true),
];

#[test]
fn narrow_matmuls_match_the_reference_interpreter() {
    let _exclusive = compiled_code_lock();
    let registry = registry();
    let context = MlirContext::new();
    let mut failures = Vec::new();
    for (rows, depth, columns, constant) in CASES {
        let text = dense(rows, depth, columns, constant);
        let name = format!(
            "dense {rows}x{depth}x{columns}{}",
            if constant { " constant" } else { "" }
        );
        let (file, _) = decode(&name, text.as_bytes());
        let module = load(&file, 0..file.text().len(), &registry).expect("the model is valid");
        for unit in ["avx2", "avx512"] {
            for (fusion, threads) in [(true, 1), (false, 1), (true, 3)] {
                let mut pipeline = Pipeline::preset(3, fusion).with_threads(threads);
                pipeline.set_option("tessera-fuse", "unit", unit);
                pipeline.set_option("tessera-tile", "unit", unit);
                pipeline.set_option("tessera-parallelize", "min-work", "1");
                let llvm = jit_options(&module, &pipeline);
                let (jit, _) = compile(&context, &module, &file, &pipeline, llvm)
                    .unwrap_or_else(|d| panic!("{name} {unit} does not compile: {d:?}"));
                let inputs = random_inputs(&module.funcs[0], 7);
                let got = jit.call("f", &inputs).expect("the call runs");
                let want = interpret(&module, 0, &inputs).expect("the interpreter runs");
                let c = compare(&got[0], &want[0], Tolerance::for_function(&module, 0));
                if !c.pass {
                    failures.push(format!(
                        "{name} {unit} fusion={fusion} threads={threads}: max abs {:.3e}",
                        c.max_abs
                    ));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
