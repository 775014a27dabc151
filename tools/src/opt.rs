//! `tessera-opt`: reads tessera IR, reports every error with its location, prints the module
//! in canonical form; `--split-input-file` and `--verify-diagnostics` work as in `mlir-opt`.

use crate::registry;
use clap::Parser;
use melior::ir::operation::OperationPrintingFlags;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use tessera::diag::render_all;
use tessera::diag::Diagnostic;
use tessera::expected_diagnostics::check_expected;
use tessera::frontend::{decode, load, split_chunks, SPLIT_MARKER};
use tessera::mlir::convert::convert_module;
use tessera::mlir::jit::{write_object_file, Signature};
use tessera::mlir::llvm::llvm_ir;
use tessera::mlir::pipeline::{run_stages, DEFAULT_CPU};
use tessera::mlir::MlirContext;
use tessera::reference::render_reference;
use tessera::source::Span;
use tessera::syntax::printer::print_module;

/// Command-line options of `tessera-opt`.
#[derive(Parser, Debug)]
#[command(
    name = "tessera-opt",
    version,
    about = "Read a tessera IR module (.tsr), verify it, and print it in canonical form.",
    after_help = "\
Exit status: 0 when the input is valid, 1 when it has errors (each reported as
FILE:LINE:COL: error: ... with the source line and a caret), 2 for usage errors.

Examples:
  tessera-opt testdata/models/seed_mlp.tsr          print the seed model canonically
  tessera-opt - < model.tsr                         read standard input
  tessera-opt model.tsr -o canonical.tsr            write the output to a file
  tessera-opt cases.tsr --split-input-file          each '// -----' chunk on its own
  tessera-opt bad.tsr --split-input-file --verify-diagnostics
        check the '// expected-error @+1 {{...}}' comments against the diagnostics
  tessera-opt --print-op-reference                  the reference of every op"
)]
pub struct OptArgs {
    /// Input file; `-` or nothing reads standard input.
    pub input: Option<PathBuf>,
    /// Write the output here instead of standard output.
    #[arg(short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Process each chunk separated by a `// -----` line on its own; outputs are joined with
    /// the same separator.
    #[arg(long)]
    pub split_input_file: bool,
    /// Check diagnostics against `// expected-error @+N {{...}}` comments (also
    /// `expected-note`, `expected-warning`, `@-N`, `@above`, `@below`); succeed when every
    /// diagnostic was expected and every expectation met.
    #[arg(long)]
    pub verify_diagnostics: bool,
    /// What to print: the canonical module (`tsr`), or its MLIR after conversion (`mlir`).
    #[arg(long, value_enum, default_value_t = Emit::Tsr)]
    pub emit: Emit,
    /// With `--emit=mlir`: print MLIR locations (each op's `.tsr` file:line:col and value
    /// name), as `mlir-opt --mlir-print-debuginfo` does.
    #[arg(long)]
    pub mlir_print_debuginfo: bool,
    /// Print the reference of every registered op (Markdown) and exit.
    #[arg(long, conflicts_with_all = ["input", "split_input_file", "verify_diagnostics"])]
    pub print_op_reference: bool,
}

/// What `tessera-opt` prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Emit {
    /// The module in canonical `.tsr` form.
    Tsr,
    /// MLIR func/tensor/linalg/arith/math, after `tessera-convert-to-linalg`.
    Mlir,
    /// LLVM IR of the default CPU pipeline.
    LlvmIr,
    /// An object file with the C interface (`_mlir_ciface_<name>`) of every function;
    /// needs `-o FILE`.
    Obj,
}

/// Runs `tessera-opt` with `args`, writing diagnostics to `stderr`.
pub fn run_opt(args: &OptArgs, stderr: &mut dyn Write) -> ExitCode {
    let registry = registry();
    if args.emit == Emit::Obj && args.output.is_none() {
        let _ = writeln!(
            stderr,
            "tessera-opt: error: --emit=obj needs an output file: add -o FILE"
        );
        return ExitCode::from(2);
    }
    if args.print_op_reference {
        return write_output(args, &render_reference(&registry), stderr);
    }
    let (name, bytes) = match read_input(args.input.as_deref()) {
        Ok(input) => input,
        Err(error) => {
            let _ = writeln!(stderr, "tessera-opt: error: {error}");
            return ExitCode::FAILURE;
        }
    };
    let (file, decode_error) = decode(&name, &bytes);
    if let Some(diag) = decode_error {
        let _ = write!(stderr, "{}", diag.render(&file));
        return ExitCode::FAILURE;
    }
    let whole = 0..file.text().len();
    let chunks = if args.split_input_file {
        split_chunks(file.text())
    } else {
        std::iter::once(whole).collect()
    };
    let mut failed = false;
    let mut outputs = Vec::new();
    let mlir = MlirContext::new();
    for chunk in chunks {
        let result = load(&file, chunk.clone(), &registry);
        let reported = match (&result, args.verify_diagnostics) {
            (_, true) => {
                let diagnostics = result.as_ref().err().map_or(&[][..], Vec::as_slice);
                check_expected(&file, chunk, diagnostics)
            }
            (Err(diagnostics), false) => diagnostics.clone(),
            (Ok(_), false) => Vec::new(),
        };
        failed |= !reported.is_empty();
        let _ = write!(stderr, "{}", render_all(&reported, &file));
        let Ok(module) = result else { continue };
        match args.emit {
            Emit::Tsr => outputs.push(print_module(&module)),
            emit => match lower(&mlir, &module, &file, emit, args) {
                Ok(text) => outputs.push(text),
                Err(diagnostics) => {
                    failed = true;
                    let _ = write!(stderr, "{}", render_all(&diagnostics, &file));
                }
            },
        }
    }
    if failed {
        return ExitCode::FAILURE;
    }
    write_output(args, &outputs.join(&format!("{SPLIT_MARKER}\n")), stderr)
}

/// Why `tessera-opt` could not read its input or write its output.
#[derive(Debug, thiserror::Error)]
pub enum IoError {
    /// The input file could not be read.
    #[error("cannot read '{path}': {source}")]
    Read {
        /// The file.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// The output could not be written.
    #[error("cannot write '{path}': {source}")]
    Write {
        /// The file, or `<stdout>`.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
}

/// The input's display name and bytes; `-` or no path is standard input (`<stdin>`).
fn read_input(path: Option<&Path>) -> Result<(String, Vec<u8>), IoError> {
    let name = match path {
        Some(p) if p.as_os_str() != "-" => p.display().to_string(),
        _ => "<stdin>".to_string(),
    };
    let mut bytes = Vec::new();
    let result = match path {
        Some(p) if p.as_os_str() != "-" => std::fs::read(p).map(|b| bytes = b),
        _ => std::io::stdin().read_to_end(&mut bytes).map(|_| ()),
    };
    result.map_err(|source| IoError::Read {
        path: name.clone(),
        source,
    })?;
    Ok((name, bytes))
}

/// The module converted (and for LLVM IR or objects, lowered) as `emit` asks; an object file
/// is written to `output` and yields no text.
fn lower(
    mlir: &MlirContext,
    module: &tessera::ir::Module,
    file: &tessera::source::SourceFile,
    emit: Emit,
    args: &OptArgs,
) -> Result<String, Vec<Diagnostic>> {
    let mut converted = convert_module(mlir, module, file)?;
    if emit == Emit::Mlir {
        let flags =
            OperationPrintingFlags::new().enable_debug_info(args.mlir_print_debuginfo, false);
        let text = converted
            .as_operation()
            .to_string_with_flags(flags)
            .map_err(|e| {
                vec![Diagnostic::error(
                    Span::at(0),
                    format!("cannot print MLIR: {e}"),
                )]
            })?;
        return Ok(format!("{text}\n"));
    }
    run_stages(mlir, &mut converted, DEFAULT_CPU, file)?;
    let failure = |message: String| vec![Diagnostic::error(Span::at(0), message)];
    match (emit, args.output.as_deref()) {
        (Emit::Obj, Some(path)) => {
            write_object_file(&converted, &Signature::of_module(module), 3, path)
                .map(|()| String::new())
                .map_err(failure)
        }
        _ => llvm_ir(&converted)
            .ok_or_else(|| failure("the lowered module does not translate to LLVM IR".into())),
    }
}

fn write_output(args: &OptArgs, text: &str, stderr: &mut dyn Write) -> ExitCode {
    let result = match &args.output {
        Some(_) if args.emit == Emit::Obj => Ok(()),
        Some(path) => std::fs::write(path, text).map_err(|source| IoError::Write {
            path: path.display().to_string(),
            source,
        }),
        None => std::io::stdout()
            .write_all(text.as_bytes())
            .map_err(|source| IoError::Write {
                path: "<stdout>".into(),
                source,
            }),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            let _ = writeln!(stderr, "tessera-opt: error: {error}");
            ExitCode::FAILURE
        }
    }
}
