//! Compiled code in memory: tessera's LLVM back end (src/mlir/cpu/cxx/llvm_backend.cpp, at the
//! LLVM options the caller picks, for the host; see `compile::jit_options`) over a module in
//! the LLVM dialect, called through the C interface with inputs validated against the
//! signature first. Results are caller-owned out-parameters; temporaries go through the
//! counting allocator.

use crate::exec::signature::{RunError, Signature};
use crate::exec::tensor::Tensor;
use crate::mlir::bridge::walk::walk;
use crate::mlir::cpu::runtime::alloc_counter::{mlir_aligned_alloc, mlir_alloc, mlir_free};
use crate::mlir::cpu::runtime::bf16_conversions::{trunc_f32_to_bf16, trunc_f64_to_bf16};
use crate::mlir::cpu::runtime::kernel_profile;
use crate::mlir::cpu::runtime::memref::HostBuffer;
use crate::mlir::cpu::runtime::memref_copy::memref_copy;
use crate::mlir::cpu::runtime::{async_runtime, parallel_for, thread_pool};
use crate::types::TensorType;
use melior::ir::attribute::{IntegerAttribute, StringAttribute};
use mlir_sys::MlirOperation;
use std::ffi::{c_char, CStr, CString};
use std::time::{Duration, Instant};

/// How LLVM compiles a module: the optimization level of its IR pipeline (the code generator
/// always runs at its default level) and whether its loop unrolling runs (see
/// `compile::jit_options`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LlvmOptions {
    /// The level of LLVM's IR pipeline, 0 to 3.
    pub level: u32,
    /// Whether LLVM unrolls loops (full, partial and runtime unrolling).
    pub unroll: bool,
    /// Whether the passes of LLVM's pipeline that change nothing in tessera's code run too
    /// (`kPassesWithoutEffect` in llvm_backend.cpp; a test compares the objects both ways).
    pub every_pass: bool,
    /// Whether tessera vectorized the module's loops: LLVM's levels 1 to 3 then run the
    /// pipeline made for such kernels (`vectorizedKernelPipeline` in llvm_backend.cpp)
    /// instead of its own.
    pub vectorized: bool,
}

impl LlvmOptions {
    /// Level 3 with unrolling: what a module nobody has tuned gets.
    pub const DEFAULT: LlvmOptions = LlvmOptions {
        level: 3,
        unroll: true,
        every_pass: false,
        vectorized: false,
    };
}

/// An address compiled code may call by name (`TesseraSymbol` in llvm_backend.cpp).
#[repr(C)]
struct BackendSymbol {
    name: *const c_char,
    address: *mut (),
}

/// What one part of a compiled module held (`TesseraPart` in llvm_backend.cpp): LLVM optimizes
/// and compiles a module in parts, each on a thread of its own, tiny kernels at level 0.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LlvmPart {
    /// What the part held, as `PartKind` numbers it.
    kind: u32,
    /// The level of LLVM's IR pipeline the part was optimized at.
    pub level: u32,
    /// The functions it defined.
    pub functions: u32,
    /// Their instructions, before optimization.
    pub instructions: u64,
    /// The bytes of the constants (weights) it defined: each is compiled in one part only.
    pub constant_bytes: u64,
    /// The milliseconds LLVM took to optimize it and generate its code, on its thread.
    pub milliseconds: f64,
    /// The compile thread it went to (0: the one that asked for the compile).
    pub thread: u32,
}

/// What a part of a compiled module held, and so how LLVM treated it (`PartKind` in
/// module_parts.h).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PartKind {
    /// Kernels, one at least with long loops: the part's level, loop strength reduction on.
    Long,
    /// Kernels whose loops are all short: the part's level, no loop strength reduction, no
    /// loop unrolled in part.
    ShortLoops,
    /// Tiny kernels: level 0.
    Tiny,
    /// Glue (no loops, no vectors: an entry calling its kernels): inlined and folded.
    Glue,
}

/// How many kinds of part there are.
const PART_KINDS: usize = 4;

impl LlvmPart {
    /// What the part held.
    pub fn kind(&self) -> PartKind {
        match self.kind {
            0 => PartKind::Long,
            1 => PartKind::ShortLoops,
            2 => PartKind::Tiny,
            _ => PartKind::Glue,
        }
    }
}

/// A compiled module in memory (`TesseraJit` in llvm_backend.cpp).
#[repr(C)]
struct BackendJit {
    _opaque: [u8; 0],
}

extern "C" {
    fn tesseraJitCompile(
        module: MlirOperation,
        level: u32,
        unroll: bool,
        every_pass: bool,
        vectorized: bool,
        threads: u32,
        symbols: *const BackendSymbol,
        symbol_count: usize,
        phases: *mut f64,
        parts: *mut LlvmPart,
        part_capacity: usize,
        part_count: *mut usize,
        error: *mut *mut c_char,
    ) -> *mut BackendJit;
    fn tesseraJitLookup(jit: *mut BackendJit, name: *const c_char) -> *mut ();
    fn tesseraJitDestroy(jit: *mut BackendJit);
    fn tesseraWriteObjectFile(
        module: MlirOperation,
        level: u32,
        unroll: bool,
        every_pass: bool,
        vectorized: bool,
        path: *const c_char,
        error: *mut *mut c_char,
    ) -> bool;
    fn tesseraBackendFreeMessage(message: *mut c_char);
}

/// The message the back end reported, released.
fn take_message(message: *mut c_char) -> String {
    if message.is_null() {
        return "the LLVM back end failed".into();
    }
    // SAFETY: a non-null message is a NUL-terminated string the back end allocated for the
    // caller; it is copied, then released once with the back end's own function.
    unsafe {
        let text = CStr::from_ptr(message).to_string_lossy().into_owned();
        tesseraBackendFreeMessage(message);
        text
    }
}

/// The functions compiled code calls that tessera provides: the counting allocator,
/// `memrefCopy`, compiler-rt's bf16 truncations, the async runtime, the kernel profile's
/// clock.
fn runtime_symbols() -> Vec<(CString, *mut ())> {
    let mut symbols: Vec<(&str, *mut ())> = vec![
        ("memrefCopy", memref_copy as *mut ()),
        ("__truncsfbf2", trunc_f32_to_bf16 as *mut ()),
        ("__truncdfbf2", trunc_f64_to_bf16 as *mut ()),
        ("_mlir_memref_to_llvm_alloc", mlir_alloc as *mut ()),
        (
            "_mlir_memref_to_llvm_aligned_alloc",
            mlir_aligned_alloc as *mut (),
        ),
        ("_mlir_memref_to_llvm_free", mlir_free as *mut ()),
    ];
    symbols.extend(parallel_for::symbols());
    symbols.extend(async_runtime::symbols());
    symbols.extend(kernel_profile::symbols());
    symbols
        .into_iter()
        .map(|(name, address)| {
            (
                CString::new(name).expect("no NUL in a symbol name"),
                address,
            )
        })
        .collect()
}

/// The threads LLVM optimizes and generates code on (one part of the module each): one per
/// core, at most 8.
pub fn codegen_threads() -> u32 {
    std::thread::available_parallelism().map_or(1, |n| n.get().min(8) as u32)
}

/// Whether `llvm_module` defines `name` (an `llvm.func` with a body).
fn defines(llvm_module: &melior::ir::Module<'_>, name: &str) -> bool {
    let mut found = false;
    walk(llvm_module, |op| {
        found |= op.name() == "llvm.func"
            && op.has_body()
            && op
                .attribute("sym_name")
                .is_some_and(|n| n.to_string() == format!("\"{name}\""));
    });
    found
}

/// Compiles `llvm_module` and writes its object code (with the `_mlir_ciface_` C interface
/// of every function in `signatures`) to `path`. The object calls
/// `_mlir_memref_to_llvm_alloc(size_t)` and `_mlir_memref_to_llvm_free(void *)` for its
/// temporaries, and may call `memrefCopy` (MLIR's runner-utils library has it): whoever links
/// it provides them (`malloc` and `free` will do).
pub fn write_object_file(
    llvm_module: &melior::ir::Module<'_>,
    signatures: &[Signature],
    options: LlvmOptions,
    path: &std::path::Path,
) -> Result<(), String> {
    if let Some(missing) = signatures
        .iter()
        .find(|s| !defines(llvm_module, &format!("_mlir_ciface_{}", s.name)))
    {
        return Err(format!("no code for '@{}'", missing.name));
    }
    let text = path.to_str().ok_or("the output path is not UTF-8")?;
    let c_path = CString::new(text).map_err(|_| "the output path holds a NUL byte")?;
    let mut error = std::ptr::null_mut();
    // SAFETY: the module is live (a module the back end cannot translate is reported, not
    // compiled); the path is a
    // NUL-terminated string that outlives the call; an error message is taken over below.
    let written = unsafe {
        tesseraWriteObjectFile(
            llvm_module.as_operation().to_raw(),
            options.level.min(3),
            options.unroll,
            options.every_pass,
            options.vectorized,
            c_path.as_ptr(),
            &mut error,
        )
    };
    if written {
        Ok(())
    } else {
        Err(take_message(error))
    }
}

/// A compiled module ready to call.
pub struct Jit {
    backend: *mut BackendJit,
    signatures: Vec<Signature>,
    /// Each signature's packed interface (`_mlir__mlir_ciface_NAME`), in the same order,
    /// looked up once when compiled: an ORC lookup takes the session's lock and waits on a
    /// future, a cost every call paid.
    entries: Vec<*mut ()>,
    /// The threads its parallel loops were compiled for (`tessera.threads`; 1 without).
    threads: usize,
    /// How long LLVM took to translate, optimize and generate (and link) the code.
    phases: [Duration; 3],
    /// The parts LLVM compiled the module in.
    parts: Vec<LlvmPart>,
    /// What each kernel `tessera-profile-kernels` timed computes, by index (empty when the
    /// module was not profiled).
    kernel_labels: Vec<String>,
}

/// The module attribute `tessera-parallelize` records its thread count in.
pub const THREADS_ATTRIBUTE: &str = "tessera.threads";

/// The module attribute `tessera-profile-kernels` records its kernels' labels in
/// (src/mlir/cpu/cxx/kernel_profile.cpp).
pub const KERNEL_PROFILE_ATTRIBUTE: &str = "tessera.kernel_profile";

/// The labels of `llvm_module`'s profiled kernels, by index (none when it is not profiled):
/// one string attribute, a line per label (melior 0.22 takes no array attribute apart: its
/// `ArrayAttribute::try_from` checks for a dense i64 array).
fn kernel_labels(llvm_module: &melior::ir::Module<'_>) -> Vec<String> {
    llvm_module
        .as_operation()
        .attribute(KERNEL_PROFILE_ATTRIBUTE)
        .ok()
        .and_then(|a| StringAttribute::try_from(a).ok())
        .map_or_else(Vec::new, |labels| {
            labels.value().lines().map(str::to_string).collect()
        })
}

impl Jit {
    /// Compiles `llvm_module` (fully in the LLVM dialect) whose functions have `signatures`,
    /// as `options` say, its code generator on one thread per core. Returns `None` when the
    /// module does not translate to LLVM IR (the back end translates it first and stops
    /// there) or lacks an entry point.
    pub fn new(
        llvm_module: &melior::ir::Module<'_>,
        signatures: Vec<Signature>,
        options: LlvmOptions,
    ) -> Option<Jit> {
        let kernel_labels = kernel_labels(llvm_module);
        let symbols = runtime_symbols();
        let table: Vec<BackendSymbol> = symbols
            .iter()
            .map(|(name, address)| BackendSymbol {
                name: name.as_ptr(),
                address: *address,
            })
            .collect();
        let mut error = std::ptr::null_mut();
        let mut phases = [0.0f64; 3];
        let threads = codegen_threads();
        // At most one part per thread and kind.
        let mut parts = vec![LlvmPart::default(); PART_KINDS * threads as usize + 1];
        let mut part_count = 0usize;
        // SAFETY: the module is live (one that does not translate is reported); `phases` has
        // the three entries the back end adds to, `parts` the capacity passed; the symbol
        // table points to NUL-terminated names and to functions with the C signatures
        // compiled code declares for them (`_mlir_memref_to_llvm_alloc(size)`,
        // `_aligned_alloc(alignment, size)`, `_free(ptr)`, `memrefCopy(elemSize, src, dst)`,
        // compiler-rt's `__truncsfbf2(float)` and `__truncdfbf2(double)`, MLIR's async
        // runtime), all of which live as long as the program; the back end copies the table.
        let backend = unsafe {
            tesseraJitCompile(
                llvm_module.as_operation().to_raw(),
                options.level.min(3),
                options.unroll,
                options.every_pass,
                options.vectorized,
                threads,
                table.as_ptr(),
                table.len(),
                phases.as_mut_ptr(),
                parts.as_mut_ptr(),
                parts.len(),
                &mut part_count,
                &mut error,
            )
        };
        if backend.is_null() {
            take_message(error);
            return None;
        }
        let mut jit = Jit {
            backend,
            signatures,
            entries: Vec::new(),
            threads: 1,
            phases: phases.map(|ms| Duration::from_secs_f64(ms / 1000.0)),
            parts: parts.into_iter().take(part_count).collect(),
            kernel_labels,
        };
        // Linking is lazy: looking every entry point up now makes compile time include it
        // (as code generation's), and the first call only a call.
        let linking = Instant::now();
        jit.entries = jit
            .signatures
            .iter()
            .map(|s| jit.packed_entry(&s.name))
            .collect();
        let all_found = jit.entries.iter().all(|entry| !entry.is_null());
        jit.phases[2] += linking.elapsed();
        let threads = llvm_module
            .as_operation()
            .attribute(THREADS_ATTRIBUTE)
            .ok()
            .and_then(|a| IntegerAttribute::try_from(a).ok())
            .map_or(1, |a| usize::try_from(a.value()).unwrap_or(1).max(1));
        jit.threads = threads;
        all_found.then_some(jit)
    }

    /// The address of function `name`'s packed interface (`_mlir__mlir_ciface_NAME`, taking
    /// one pointer per argument), or null.
    fn packed_entry(&self, name: &str) -> *mut () {
        let Ok(symbol) = CString::new(format!("_mlir__mlir_ciface_{name}")) else {
            return std::ptr::null_mut();
        };
        // SAFETY: the back end is live (owned by `self`) and the name NUL-terminated.
        unsafe { tesseraJitLookup(self.backend, symbol.as_ptr()) }
    }

    /// How long each phase of LLVM's compilation took: `llvm-translate` (MLIR to LLVM IR),
    /// `llvm-optimize` (LLVM's IR pipeline), `llvm-codegen` (machine code, on threads, and
    /// linking).
    pub fn phase_times(&self) -> [(&'static str, Duration); 3] {
        [
            ("llvm-translate", self.phases[0]),
            ("llvm-optimize", self.phases[1]),
            ("llvm-codegen", self.phases[2]),
        ]
    }

    /// The parts LLVM optimized and compiled the module in, each on a thread of its own.
    pub fn parts(&self) -> &[LlvmPart] {
        &self.parts
    }

    /// The threads a call runs on.
    pub fn threads(&self) -> usize {
        self.threads
    }

    /// What each kernel computes, by the index its profile
    /// ([`kernel_profile::take`]) has it at; empty unless the pipeline ran
    /// `tessera-profile-kernels`.
    pub fn kernel_labels(&self) -> &[String] {
        &self.kernel_labels
    }

    /// The signature of function `name`.
    pub fn signature(&self, name: &str) -> Result<&Signature, RunError> {
        Signature::find(&self.signatures, name)
    }

    /// Checks `inputs` against function `name`'s parameters: count, then every type.
    pub fn check_inputs(&self, name: &str, inputs: &[&TensorType]) -> Result<&Signature, RunError> {
        let signature = self.signature(name)?;
        signature.check_inputs(inputs)?;
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
        let entry = self
            .signatures
            .iter()
            .position(|s| s.name == name)
            .map_or(std::ptr::null_mut(), |i| self.entries[i]);
        if entry.is_null() {
            return Err(RunError::Invoke(name.to_string()));
        }
        thread_pool::set_active_threads(self.threads);
        // SAFETY: `entry` is the packed interface the back end generated for `name`: a
        // `void (void **)` that reads each argument through its pointer. The C interface of a
        // function with N inputs and M results (made out-parameters by bufferization) takes
        // N + M pointers to strided memref descriptors; each argument points to such a
        // pointer, each descriptor describes a live buffer of exactly the type the signature
        // has (checked above), and all of them outlive the call.
        unsafe {
            let packed: extern "C" fn(*mut *mut ()) = std::mem::transmute(entry);
            packed(arguments.as_mut_ptr());
        }
        Ok(())
    }
}

impl Drop for Jit {
    fn drop(&mut self) {
        thread_pool::wait_until_no_task_runs();
        // SAFETY: the back end was created by `tesseraJitCompile`, is owned by this `Jit`
        // alone, and no code of it runs once the `Jit` is dropped: no call is in progress (a
        // call borrows the `Jit`) and no worker is still inside one of its tasks.
        unsafe { tesseraJitDestroy(self.backend) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mlir::bridge::context::MlirContext;

    /// A bf16 vector of 25 lanes loaded in one block and taken as integers in another (a loop),
    /// for a CPU with AVX512-BF16: x86's code generator aborted on the cross-block value
    /// ("Do not know how to soft promote this operator's operand") in parts compiled without
    /// LLVM's IR pipeline, whatever the host.
    #[test]
    fn bf16_vectors_compile_for_avx512_bf16_without_the_ir_pipeline() {
        let context = MlirContext::new();
        let module = context
            .parse_module(
                r#"
llvm.func @_mlir_ciface_move(%src: !llvm.ptr, %dst: !llvm.ptr, %n: i64) attributes {target_cpu = "sapphirerapids"} {
  %v = llvm.load %src {alignment = 2 : i64} : !llvm.ptr -> vector<25xbf16>
  %zero = llvm.mlir.constant(0 : i64) : i64
  %one = llvm.mlir.constant(1 : i64) : i64
  llvm.br ^loop(%zero : i64)
^loop(%i: i64):
  %x = llvm.bitcast %v : vector<25xbf16> to vector<25xi16>
  %at = llvm.getelementptr %dst[%i] : (!llvm.ptr, i64) -> !llvm.ptr, vector<25xi16>
  llvm.store %x, %at {alignment = 2 : i64} : vector<25xi16>, !llvm.ptr
  %next = llvm.add %i, %one : i64
  %more = llvm.icmp "slt" %next, %n : i64
  llvm.cond_br %more, ^loop(%next : i64), ^done
^done:
  llvm.return
}
"#,
            )
            .expect("the kernel parses");
        let options = LlvmOptions {
            level: 0,
            unroll: false,
            every_pass: false,
            vectorized: false,
        };
        let jit = Jit::new(&module, vec![], options).expect("the kernel compiles");
        assert!(!jit.packed_entry("move").is_null());
    }
}
