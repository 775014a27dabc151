//! Helpers shared by the suite: paths, loading and printing through the front end.

use std::path::{Path, PathBuf};
use tessera::diag::render_all;
use tessera::frontend::{decode, load};
use tessera::ir::Module;
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
