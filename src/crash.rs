//! No silent death: when MLIR, LLVM or compiled code crashes (a signal, an LLVM fatal error,
//! a panic), the tool says which step was running on which input, writes that step's
//! reproducer, and exits with [`EXIT_CRASH`].
//!
//! What the report needs is prepared before each step ([`Activity::enter`]): the message
//! lines and the reproducer's path and bytes. The signal handler only reads them through an
//! atomic pointer and calls `open`, `write` and `_exit`, which are async-signal-safe; it runs
//! on the alternate signal stack Rust gives its threads, so a stack overflow is reported too.

use std::ffi::CString;
use std::path::{Path, PathBuf};
use std::ptr;
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::Once;

/// The exit status of a tool that crashed inside MLIR, LLVM, compiled code or tessera itself
/// (0: success, 1: errors in the input, 2: usage errors).
pub const EXIT_CRASH: u8 = 3;

/// The exit status when compiled code runs out of memory (a temporary too large for this
/// machine): not a bug, not an input error either.
pub const EXIT_OUT_OF_MEMORY: u8 = 4;

/// Reports that compiled code could not allocate `bytes` and exits with
/// [`EXIT_OUT_OF_MEMORY`]. Allocates nothing.
pub fn out_of_memory(bytes: usize) -> ! {
    let write = |bytes: &[u8]| {
        // SAFETY: writing a live buffer to standard error.
        unsafe { libc::write(2, bytes.as_ptr().cast(), bytes.len()) };
    };
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    let mut rest = bytes;
    loop {
        at -= 1;
        digits[at] = b'0' + (rest % 10) as u8;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    write(b"tessera: error: out of memory: compiled code could not allocate ");
    write(&digits[at..]);
    write(b" bytes\n");
    // SAFETY: ends the process; nothing can continue without the buffer.
    unsafe { libc::_exit(i32::from(EXIT_OUT_OF_MEMORY)) }
}

/// What is running, prepared for a crash report.
struct Report {
    /// `<tool>: internal error: ` (the cause follows it).
    prefix: Vec<u8>,
    /// ` while running '<step>' on <input>\n` and the notes about the reproducer.
    context: Vec<u8>,
    /// Where the reproducer goes, and its bytes.
    reproducer: Option<(CString, Vec<u8>)>,
}

static TOOL: AtomicPtr<u8> = AtomicPtr::new(ptr::null_mut());
static CURRENT: AtomicPtr<Report> = AtomicPtr::new(ptr::null_mut());

/// A step in progress; the report it prepared stays current until it is dropped, when the
/// one before it comes back.
#[must_use = "the activity ends when this is dropped"]
pub struct Activity {
    report: *mut Report,
    previous: *mut Report,
}

impl Activity {
    /// Records that `step` runs on `input` (a file name). With `reproducer`, a crash writes
    /// its text (which should say how to rerun the step) to that path.
    pub fn enter(step: &str, input: &str, reproducer: Option<(&Path, String)>) -> Activity {
        let tool = tool_name();
        let command: Vec<String> = std::env::args().collect();
        let mut context = format!(
            " while running '{step}' on {input}\n{tool}: note: the command was: {}\n",
            command.join(" ")
        );
        let reproducer = reproducer.and_then(|(path, text)| {
            let c_path = CString::new(path.as_os_str().as_encoded_bytes()).ok()?;
            context.push_str(&format!(
                "{tool}: note: a reproducer of '{step}' is saved in {}\n",
                path.display()
            ));
            Some((c_path, text.into_bytes()))
        });
        let evidence = if reproducer.is_some() {
            "the reproducer"
        } else {
            "the input and the command"
        };
        context.push_str(&format!(
            "{tool}: note: this is a bug in tessera (or in MLIR/LLVM), not in the input: please report it with {evidence}\n"
        ));
        let report = Box::into_raw(Box::new(Report {
            prefix: format!("{tool}: internal error: ").into_bytes(),
            context: context.into_bytes(),
            reproducer,
        }));
        Activity {
            report,
            previous: CURRENT.swap(report, Ordering::SeqCst),
        }
    }

    /// Writes the reproducer (for a step that failed without crashing); returns its path.
    pub fn save_reproducer(&self) -> Option<PathBuf> {
        // SAFETY: `report` is owned by this activity until it is dropped.
        let (path, text) = unsafe { &*self.report }.reproducer.as_ref()?;
        let path = PathBuf::from(path.to_str().ok()?);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).ok()?;
        }
        std::fs::write(&path, text).ok()?;
        Some(path)
    }
}

impl Drop for Activity {
    fn drop(&mut self) {
        CURRENT.store(self.previous, Ordering::SeqCst);
        // SAFETY: `report` came from `Box::into_raw` in `enter` and is no longer current; a
        // handler that had read it has ended the process.
        drop(unsafe { Box::from_raw(self.report) });
    }
}

/// The path a step's reproducer is written to: in `dir`, or the temporary directory;
/// `extension` says what it holds (`tsr` or `mlir`).
pub fn reproducer_path(dir: Option<&Path>, step: &str, extension: &str) -> PathBuf {
    dir.map(Path::to_path_buf)
        .unwrap_or_else(std::env::temp_dir)
        .join(format!(
            "tessera-reproducer-{}-{step}.{extension}",
            std::process::id()
        ))
}

/// Installs the crash reporters for the tool `tool` (its name heads every report): handlers
/// of SIGSEGV, SIGBUS, SIGILL, SIGFPE and SIGABRT, LLVM's fatal-error handler, and a panic
/// hook. Once per process; later calls do nothing.
pub fn install(tool: &'static str) {
    static INSTALLED: Once = Once::new();
    INSTALLED.call_once(|| {
        let name = Box::leak(format!("{tool}\0").into_boxed_str());
        TOOL.store(name.as_ptr() as *mut u8, Ordering::SeqCst);
        for signal in [
            libc::SIGSEGV,
            libc::SIGBUS,
            libc::SIGILL,
            libc::SIGFPE,
            libc::SIGABRT,
        ] {
            // SAFETY: `on_signal` has the signature SA_SIGINFO handlers have and only calls
            // async-signal-safe functions; the sigaction struct is fully initialized.
            unsafe {
                let mut action: libc::sigaction = std::mem::zeroed();
                action.sa_sigaction = on_signal as *const () as usize;
                action.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK | libc::SA_NODEFER;
                libc::sigemptyset(&mut action.sa_mask);
                libc::sigaction(signal, &action, ptr::null_mut());
            }
        }
        #[cfg(feature = "mlir")]
        // SAFETY: LLVM calls the handler with a NUL-terminated reason; it does not return.
        unsafe {
            LLVMInstallFatalErrorHandler(on_llvm_fatal_error);
        }
        let default_hook = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            default_hook(info);
            report_and_exit(b"a panic in tessera");
        }));
    });
}

fn tool_name() -> String {
    let name = TOOL.load(Ordering::SeqCst);
    if name.is_null() {
        return "tessera".into();
    }
    // SAFETY: TOOL holds a leaked, NUL-terminated string from `install`.
    unsafe { std::ffi::CStr::from_ptr(name as *const libc::c_char) }
        .to_string_lossy()
        .into_owned()
}

#[cfg(feature = "mlir")]
extern "C" {
    /// LLVM-C (`llvm-c/ErrorHandling.h`): the handler `report_fatal_error` calls.
    fn LLVMInstallFatalErrorHandler(handler: extern "C" fn(*const libc::c_char));
}

#[cfg(feature = "mlir")]
extern "C" fn on_llvm_fatal_error(reason: *const libc::c_char) {
    let mut cause = b"LLVM ERROR: ".to_vec();
    if !reason.is_null() {
        // SAFETY: LLVM passes a NUL-terminated string.
        cause.extend_from_slice(unsafe { std::ffi::CStr::from_ptr(reason) }.to_bytes());
    }
    report_and_exit(&cause);
}

extern "C" fn on_signal(signal: libc::c_int, _: *mut libc::siginfo_t, _: *mut libc::c_void) {
    let cause: &[u8] = match signal {
        libc::SIGSEGV => b"signal SIGSEGV (invalid memory access)",
        libc::SIGBUS => b"signal SIGBUS (bus error)",
        libc::SIGILL => b"signal SIGILL (illegal instruction)",
        libc::SIGFPE => b"signal SIGFPE (arithmetic exception)",
        libc::SIGABRT => b"signal SIGABRT (abort)",
        _ => b"a signal",
    };
    report_and_exit(cause);
}

/// Writes the report of the current activity (or of a crash outside any step) and exits
/// with [`EXIT_CRASH`]. Async-signal-safe: no allocation, no locks.
fn report_and_exit(cause: &[u8]) -> ! {
    let write = |bytes: &[u8]| {
        // SAFETY: writing a live buffer to standard error.
        unsafe { libc::write(2, bytes.as_ptr().cast(), bytes.len()) };
    };
    // A second crash while reporting (or on another thread) must not report again.
    let report = CURRENT.swap(ptr::null_mut(), Ordering::SeqCst);
    if report.is_null() {
        write(b"tessera: internal error: ");
        write(cause);
        write(b"\n");
    } else {
        // SAFETY: CURRENT only holds reports from `Activity::enter`, freed only after they
        // are swapped out, which this swap just did.
        let report = unsafe { &*report };
        write(&report.prefix);
        write(cause);
        write(&report.context);
        if let Some((path, text)) = &report.reproducer {
            // SAFETY: `path` is NUL-terminated; the descriptor is closed before exiting.
            unsafe {
                let fd = libc::open(
                    path.as_ptr(),
                    libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC,
                    0o644,
                );
                if fd >= 0 {
                    libc::write(fd, text.as_ptr().cast(), text.len());
                    libc::close(fd);
                }
            }
        }
    }
    // SAFETY: ends the process at once, without running anything that may be corrupted.
    unsafe { libc::_exit(i32::from(EXIT_CRASH)) }
}
