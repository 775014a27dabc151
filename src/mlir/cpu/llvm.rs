//! LLVM IR text of a module in the LLVM dialect, through MLIR's translation and the LLVM-C API
//! (both linked already; melior wraps neither).

use melior::ir::Module;
use std::ffi::{c_char, CStr};

extern "C" {
    fn LLVMContextCreate() -> mlir_sys::LLVMContextRef;
    fn LLVMContextDispose(context: mlir_sys::LLVMContextRef);
    fn LLVMPrintModuleToString(module: mlir_sys::LLVMModuleRef) -> *mut c_char;
    fn LLVMDisposeMessage(message: *mut c_char);
    fn LLVMDisposeModule(module: mlir_sys::LLVMModuleRef);
}

/// The LLVM IR of `module`, or `None` when it does not translate (it is not fully in the
/// LLVM dialect).
pub fn llvm_ir(module: &Module<'_>) -> Option<String> {
    with_translation(module, |translated| {
        // SAFETY: `translated` is a live module; the printed string is copied and then
        // released with LLVMDisposeMessage, as the LLVM-C API requires.
        unsafe {
            let raw = LLVMPrintModuleToString(translated);
            let text = CStr::from_ptr(raw).to_string_lossy().into_owned();
            LLVMDisposeMessage(raw);
            text
        }
    })
}

/// `use_module` applied to the LLVM translation of `module`, or `None` when it does not
/// translate.
fn with_translation<T>(
    module: &Module<'_>,
    use_module: impl FnOnce(mlir_sys::LLVMModuleRef) -> T,
) -> Option<T> {
    // SAFETY: the LLVM context is created here and disposed after the module it owns; the
    // translated module is checked for null before use and disposed after it.
    unsafe {
        let context = LLVMContextCreate();
        let translated =
            mlir_sys::mlirTranslateModuleToLLVMIR(module.as_operation().to_raw(), context);
        let result = if translated.is_null() {
            None
        } else {
            let result = use_module(translated);
            LLVMDisposeModule(translated);
            Some(result)
        };
        LLVMContextDispose(context);
        result
    }
}
