//! Compiled code in memory: MLIR's ExecutionEngine (at the LLVM optimization level the caller
//! picks, for the host; see `compile::jit_opt_level`) over a module in
//! the LLVM dialect, called through the C interface with inputs validated against the
//! signature first. Results are caller-owned out-parameters; temporaries go through the
//! counting allocator.

use crate::exec::tensor::Tensor;
use crate::ir::Module;
use crate::mlir::alloc_counter::{mlir_aligned_alloc, mlir_alloc, mlir_free};
use crate::mlir::async_runtime;
use crate::mlir::bf16_conversions::{trunc_f32_to_bf16, trunc_f64_to_bf16};
use crate::mlir::llvm::translates_to_llvm_ir;
use crate::mlir::memref::HostBuffer;
use crate::mlir::memref_copy::memref_copy;
use crate::types::TensorType;
use melior::ir::attribute::IntegerAttribute;
use melior::ExecutionEngine;

/// A function's interface: parameter names and types, result types.
#[derive(Clone, Debug, PartialEq)]
pub struct Signature {
    /// The function's name.
    pub name: String,
    /// Parameter names (without `%`) and types.
    pub params: Vec<(String, TensorType)>,
    /// Result types, in return order.
    pub results: Vec<TensorType>,
}

impl Signature {
    /// The signatures of every function of `module`.
    pub fn of_module(module: &Module) -> Vec<Signature> {
        module
            .funcs
            .iter()
            .map(|f| Signature {
                name: f.name.clone(),
                params: f
                    .params
                    .iter()
                    .map(|&p| (f.value(p).name.clone(), f.value(p).ty.clone()))
                    .collect(),
                results: f.result_types.clone(),
            })
            .collect()
    }
}

/// Why a call could not run.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RunError {
    /// No function of that name.
    #[error("no function '@{name}' in the module (functions: {available})")]
    UnknownFunction {
        /// The name asked for.
        name: String,
        /// The names there are.
        available: String,
    },
    /// Wrong number of inputs.
    #[error("'@{func}' takes {expected} inputs, but {found} were given")]
    InputCount {
        /// The function.
        func: String,
        /// Its parameter count.
        expected: usize,
        /// The inputs given.
        found: usize,
    },
    /// An input of the wrong shape or element type.
    #[error("input '{name}' has type {found}, but '@{func}' expects {expected}")]
    InputType {
        /// The function.
        func: String,
        /// The parameter.
        name: String,
        /// Its type.
        expected: TensorType,
        /// The input's type.
        found: TensorType,
    },
    /// A buffer could not be allocated.
    #[error("cannot allocate a buffer for {0}")]
    Allocation(TensorType),
    /// The engine could not run the function.
    #[error("the compiled function '@{0}' cannot be invoked")]
    Invoke(String),
}

/// An execution engine for `llvm_module` (already checked to translate) that resolves the
/// allocation functions compiled code calls to the counting allocator.
fn engine(
    llvm_module: &melior::ir::Module<'_>,
    opt_level: u32,
    object_dump: bool,
) -> ExecutionEngine {
    let engine = ExecutionEngine::new(llvm_module, opt_level.min(3) as usize, &[], object_dump);
    // SAFETY: the functions have the C signatures compiled code declares for
    // `_mlir_memref_to_llvm_alloc(size)`, `_aligned_alloc(alignment, size)`, `_free(ptr)`,
    // `memrefCopy(elemSize, src, dst)` and compiler-rt's `__truncsfbf2(float)` and
    // `__truncdfbf2(double)`, and live as long as the program.
    unsafe {
        engine.register_symbol("memrefCopy", memref_copy as *mut ());
        engine.register_symbol("__truncsfbf2", trunc_f32_to_bf16 as *mut ());
        engine.register_symbol("__truncdfbf2", trunc_f64_to_bf16 as *mut ());
        engine.register_symbol("_mlir_memref_to_llvm_alloc", mlir_alloc as *mut ());
        engine.register_symbol(
            "_mlir_memref_to_llvm_aligned_alloc",
            mlir_aligned_alloc as *mut (),
        );
        engine.register_symbol("_mlir_memref_to_llvm_free", mlir_free as *mut ());
        for (name, function) in async_runtime::symbols() {
            engine.register_symbol(name, function);
        }
    }
    engine
}

/// Compiles `llvm_module` and writes its object code (with the `_mlir_ciface_` C interface
/// of every function in `signatures`) to `path`. The object calls
/// `_mlir_memref_to_llvm_alloc(size_t)` and `_mlir_memref_to_llvm_free(void *)` for its
/// temporaries, and may call `memrefCopy` (MLIR's runner-utils library has it): whoever links
/// it provides them (`malloc` and `free` will do).
pub fn write_object_file(
    llvm_module: &melior::ir::Module<'_>,
    signatures: &[Signature],
    opt_level: u32,
    path: &std::path::Path,
) -> Result<(), String> {
    if !translates_to_llvm_ir(llvm_module) {
        return Err("the lowered module does not translate to LLVM IR".into());
    }
    let engine = engine(llvm_module, opt_level, true);
    // Compilation is lazy: looking the functions up makes the engine emit their code.
    for signature in signatures {
        if engine
            .lookup(&format!("_mlir_ciface_{}", signature.name))
            .is_null()
        {
            return Err(format!("no code for '@{}'", signature.name));
        }
    }
    let text = path.to_str().ok_or("the output path is not UTF-8")?;
    // LLVM reports an unwritable path only on its own standard error.
    std::fs::File::create(path).map_err(|e| format!("cannot write '{text}': {e}"))?;
    engine.dump_to_object_file(text);
    if path.exists() {
        Ok(())
    } else {
        Err(format!("cannot write '{text}'"))
    }
}

/// A compiled module ready to call.
pub struct Jit {
    engine: ExecutionEngine,
    signatures: Vec<Signature>,
    /// The threads its parallel loops were compiled for (`tessera.threads`; 1 without).
    threads: usize,
}

/// The module attribute `tessera-parallelize` records its thread count in.
pub const THREADS_ATTRIBUTE: &str = "tessera.threads";

impl Jit {
    /// Compiles `llvm_module` (fully in the LLVM dialect) whose functions have `signatures`;
    /// Returns `None` when the module does not translate to LLVM IR (checked first: the
    /// engine itself reports no failure and would crash on such a module).
    /// `opt_level` is LLVM's (0 to 3).
    pub fn new(
        llvm_module: &melior::ir::Module<'_>,
        signatures: Vec<Signature>,
        opt_level: u32,
    ) -> Option<Jit> {
        if !translates_to_llvm_ir(llvm_module) {
            return None;
        }
        let engine = engine(llvm_module, opt_level, false);
        // Code generation is lazy: looking every entry point up now makes compile time
        // include it, and the first call only a call.
        let all_found = signatures
            .iter()
            .all(|s| !engine.lookup(&format!("_mlir_ciface_{}", s.name)).is_null());
        let threads = llvm_module
            .as_operation()
            .attribute(THREADS_ATTRIBUTE)
            .ok()
            .and_then(|a| IntegerAttribute::try_from(a).ok())
            .map_or(1, |a| usize::try_from(a.value()).unwrap_or(1).max(1));
        all_found.then_some(Jit {
            engine,
            signatures,
            threads,
        })
    }

    /// The threads a call runs on.
    pub fn threads(&self) -> usize {
        self.threads
    }

    /// The signature of function `name`.
    pub fn signature(&self, name: &str) -> Result<&Signature, RunError> {
        self.signatures
            .iter()
            .find(|s| s.name == name)
            .ok_or_else(|| RunError::UnknownFunction {
                name: name.to_string(),
                available: self
                    .signatures
                    .iter()
                    .map(|s| format!("@{}", s.name))
                    .collect::<Vec<_>>()
                    .join(", "),
            })
    }

    /// Checks `inputs` against function `name`'s parameters: count, then every type.
    pub fn check_inputs(&self, name: &str, inputs: &[&TensorType]) -> Result<&Signature, RunError> {
        let signature = self.signature(name)?;
        if inputs.len() != signature.params.len() {
            return Err(RunError::InputCount {
                func: name.into(),
                expected: signature.params.len(),
                found: inputs.len(),
            });
        }
        for ((param, expected), &found) in signature.params.iter().zip(inputs) {
            if expected != found {
                return Err(RunError::InputType {
                    func: name.into(),
                    name: param.clone(),
                    expected: expected.clone(),
                    found: found.clone(),
                });
            }
        }
        Ok(signature)
    }

    /// Buffers for the results of function `name`.
    pub fn output_buffers(&self, name: &str) -> Result<Vec<HostBuffer>, RunError> {
        self.signature(name)?
            .results
            .iter()
            .map(|t| HostBuffer::zeroed(t).ok_or_else(|| RunError::Allocation(t.clone())))
            .collect()
    }

    /// Calls function `name` on tensors and returns its results.
    pub fn call(&self, name: &str, inputs: &[Tensor]) -> Result<Vec<Tensor>, RunError> {
        self.check_inputs(name, &inputs.iter().map(|t| &t.ty).collect::<Vec<_>>())?;
        let buffers = inputs
            .iter()
            .map(|t| HostBuffer::from_tensor(t).ok_or_else(|| RunError::Allocation(t.ty.clone())))
            .collect::<Result<Vec<_>, _>>()?;
        let mut outputs = self.output_buffers(name)?;
        self.call_buffers(name, &buffers, &mut outputs)?;
        Ok(outputs.iter().map(HostBuffer::to_tensor).collect())
    }

    /// Calls function `name` on prepared buffers (no allocation on this path), writing
    /// `outputs`. Inputs are validated against the signature before the call.
    pub fn call_buffers(
        &self,
        name: &str,
        inputs: &[HostBuffer],
        outputs: &mut [HostBuffer],
    ) -> Result<(), RunError> {
        let signature =
            self.check_inputs(name, &inputs.iter().map(HostBuffer::ty).collect::<Vec<_>>())?;
        let expected_outputs: Vec<&TensorType> = signature.results.iter().collect();
        let given: Vec<&TensorType> = outputs.iter().map(|b| b.ty()).collect();
        if given != expected_outputs {
            return Err(RunError::Invoke(name.to_string()));
        }
        let mut descriptors: Vec<Vec<i64>> = inputs
            .iter()
            .chain(outputs.iter())
            .map(HostBuffer::descriptor)
            .collect();
        let mut descriptor_ptrs: Vec<*mut i64> =
            descriptors.iter_mut().map(|d| d.as_mut_ptr()).collect();
        let mut arguments: Vec<*mut ()> = descriptor_ptrs
            .iter_mut()
            .map(|p| p as *mut *mut i64 as *mut ())
            .collect();
        async_runtime::set_active_threads(self.threads);
        // SAFETY: the C interface of a function with N inputs and M results (made
        // out-parameters by bufferization) takes N + M pointers to strided memref
        // descriptors; each argument points to such a pointer, each descriptor describes a
        // live buffer of exactly the type the signature has (checked above), and all of them
        // outlive the call.
        unsafe { self.engine.invoke_packed(name, &mut arguments) }
            .map_err(|_| RunError::Invoke(name.to_string()))
    }
}
