//! PTX: the text of a module's kernels once `tessera-lower-to-nvvm` has assembled them
//! (src/mlir/gpu/cxx/kernel_assembly.cpp reads it from the `gpu.binary`), what it still calls
//! without defining, and `ptxas`, which assembles it for a chip as the driver would.

use crate::mlir::gpu::toolkit;
use melior::ir::Module;
use mlir_sys::MlirOperation;
use std::ffi::{c_char, CStr};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

extern "C" {
    fn tesseraGpuAssembly(module: MlirOperation) -> *mut c_char;
    fn tesseraGpuFreeAssembly(text: *mut c_char);
}

/// The PTX of `module`'s kernels, when a pipeline has assembled them (`gpu.binary`).
pub fn kernel_ptx(module: &Module<'_>) -> Option<String> {
    // SAFETY: the module is a live operation; the returned string is owned by us until it is
    // handed back to the function that frees it, and is read before that.
    unsafe {
        let text = tesseraGpuAssembly(module.as_operation().to_raw());
        if text.is_null() {
            return None;
        }
        let ptx = CStr::from_ptr(text).to_string_lossy().into_owned();
        tesseraGpuFreeAssembly(text);
        Some(ptx)
    }
}

/// The functions `ptx` declares (`.extern .func`) but does not define: calls that no library
/// was linked for (libdevice's `__nv_expf` and the like).
pub fn unresolved_functions(ptx: &str) -> Vec<String> {
    ptx.lines()
        .filter_map(|line| line.trim().strip_prefix(".extern .func"))
        .filter_map(|rest| {
            rest.split(|c: char| c.is_whitespace() || c == '(' || c == ')')
                .rfind(|word| !word.is_empty() && !word.starts_with('.'))
                .map(str::to_string)
        })
        .collect()
}

/// Assembles `ptx` for `chip` with `ptxas` (the output is discarded): `Err` holds ptxas's
/// messages, or why it could not run.
pub fn assemble(ptx: &str, chip: &str) -> Result<(), String> {
    let ptxas = toolkit::ptxas().ok_or_else(|| toolkit::missing("ptxas"))?;
    static CALLS: AtomicUsize = AtomicUsize::new(0);
    let call = CALLS.fetch_add(1, Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("tessera-ptxas-{}-{call}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let input = dir.join(format!("{chip}.ptx"));
    std::fs::write(&input, ptx).map_err(|e| format!("cannot write {}: {e}", input.display()))?;
    let output = Command::new(&ptxas)
        .arg(format!("-arch={chip}"))
        .arg(&input)
        .arg("-o")
        .arg(dir.join(format!("{chip}.cubin")))
        .output()
        .map_err(|e| format!("cannot run {}: {e}", ptxas.display()))?;
    let _ = std::fs::remove_dir_all(&dir);
    if output.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&output.stderr).into_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unresolved_functions_are_the_declared_externs() {
        let ptx = ".version 7.8\n.extern .func  (.param .b32 func_retval0) __nv_expf\n(\n\t.param .b32 __nv_expf_param_0\n)\n;\n.visible .entry k(\n)\n{\n\tret;\n}\n";
        assert_eq!(unresolved_functions(ptx), ["__nv_expf"]);
        assert!(unresolved_functions(".visible .entry k()\n{\n}\n").is_empty());
    }
}
