//! Helpers shared by the suite: paths, loading and printing through the front end, dense
//! layers compiled for each vector unit against the reference interpreter.

use std::path::{Path, PathBuf};
use tessera::diag::render_all;
use tessera::exec::compare::{compare, Tolerance};
use tessera::exec::interpret::interpret;
use tessera::exec::random::random_inputs;
use tessera::frontend::{decode, load};
use tessera::ir::Module;
use tessera::mlir::cpu::compile::{compile, jit_options};
use tessera::mlir::pipeline::Pipeline;
use tessera::mlir::MlirContext;
use tessera::syntax::printer::print_module;
use tessera_tools::registry;

/// The repository root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tools/ is inside the repository")
        .to_path_buf()
}

/// `path` relative to the repository root, as stable text for messages and snapshots.
pub fn relative(path: &Path) -> String {
    path.strip_prefix(root())
        .unwrap_or(path)
        .display()
        .to_string()
}

/// The `.tsr` files directly in `dir` (relative to the root), sorted.
pub fn tsr_files(dir: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(root().join(dir))
        .unwrap_or_else(|e| panic!("cannot list {dir}: {e}"))
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "tsr"))
        .collect();
    files.sort();
    files
}

/// Parses and verifies `text` (named `name`): the module, or the rendered diagnostics.
pub fn load_text(name: &str, bytes: &[u8]) -> Result<Module, String> {
    let (file, decode_error) = decode(name, bytes);
    if let Some(diag) = decode_error {
        return Err(diag.render(&file));
    }
    load(&file, 0..file.text().len(), &registry()).map_err(|d| render_all(&d, &file))
}

/// Canonical text of `module`.
pub fn print(module: &Module) -> String {
    print_module(module)
}

/// Held by every test that runs compiled code in this process: the allocation counter the
/// numerics test checks for leaks counts the whole process, so no other test's compiled code
/// may allocate or free while it looks.
pub fn compiled_code_lock() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A dense layer (rows x depth by depth x columns, bias, ReLU) whose weights are a parameter,
/// or a constant of distinct values where `constant`.
pub fn dense(rows: usize, depth: usize, columns: usize, constant: bool) -> String {
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

/// The disagreements with the reference interpreter of a dense layer (see [`dense`]) compiled
/// at -O3 for each vector unit of `units` (its register tiles; the code runs on the host),
/// fused and unfused on one thread and fused on three: one line per failing build.
pub fn dense_disagreements(
    rows: usize,
    depth: usize,
    columns: usize,
    constant: bool,
    units: &[&str],
) -> Vec<String> {
    let registry = registry();
    let context = MlirContext::new();
    let text = dense(rows, depth, columns, constant);
    let name = format!(
        "dense {rows}x{depth}x{columns}{}",
        if constant { " constant" } else { "" }
    );
    let (file, _) = decode(&name, text.as_bytes());
    let module = load(&file, 0..file.text().len(), &registry).expect("the model is valid");
    let mut failures = Vec::new();
    for unit in units {
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
    failures
}
