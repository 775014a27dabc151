//! `tessera-import`: an ONNX model to a `.tsr` file and its weights, kept binary, in a
//! safetensors side file beside it.

use crate::model::import_onnx;
use clap::Parser;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use tessera::weights::write_safetensors;
use tessera_onnx::Imported;

/// Command-line options of `tessera-import`.
#[derive(Parser, Debug)]
#[command(
    name = "tessera-import",
    version,
    about = "Import an ONNX model as tessera IR (.tsr), its weights in a safetensors side file.",
    after_help = "\
The graph becomes one function: its inputs the parameters (initializers that old opsets also
list as inputs are weights), its outputs the results, in order. Constants of more than 16
elements go to OUT's side file (OUT with the extension .safetensors, beside it), to which the
text refers with external<\"FILE\", \"KEY\">; smaller ones are written inline. Shape computations
on static shapes (Shape -> Gather -> Concat -> Reshape) are folded.

Exit status: 0 on success, 1 when the model cannot be read or imported (every node tessera
cannot import is listed), 2 for usage errors.

Examples:
  tessera-import resnet50.onnx -o resnet50.tsr
  tessera-import bert.onnx --input-shape input_ids=1x128 -o bert.tsr"
)]
pub struct ImportArgs {
    /// The ONNX model (.onnx).
    pub model: PathBuf,
    /// The .tsr file to write; its side file goes beside it. Without it, the text is
    /// printed (for models whose constants are all small).
    #[arg(short = 'o', long = "output", value_name = "OUT")]
    pub output: Option<PathBuf>,
    /// Fix an input's symbolic dimensions: NAME=1x3x224x224 (unknown ones default to 1); a
    /// sequence input's elements, NAME=[2x3,5]; an empty optional, NAME=none.
    #[arg(long = "input-shape", value_name = "NAME=SHAPE")]
    pub input_shapes: Vec<String>,
}

/// Runs `tessera-import`, writing text to `out` (without `-o`) and notes and errors to `err`.
pub fn run(args: &ImportArgs, out: &mut dyn Write, err: &mut dyn Write) -> ExitCode {
    match run_inner(args, out, err) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            let _ = writeln!(err, "{}", message.trim_end());
            ExitCode::FAILURE
        }
    }
}

fn run_inner(args: &ImportArgs, out: &mut dyn Write, err: &mut dyn Write) -> Result<(), String> {
    const TOOL: &str = "tessera-import";
    let side_path = args
        .output
        .as_ref()
        .map(|o| o.with_extension("safetensors"));
    let side_name = side_path
        .as_ref()
        .and_then(|p| p.file_name())
        .and_then(|n| n.to_str())
        .map_or_else(|| crate::model::side_file_for(&args.model), str::to_string);
    let imported = import_onnx(&args.model, &args.input_shapes, &side_name, TOOL)?;
    for note in &imported.notes {
        let _ = writeln!(err, "{TOOL}: note: {note}");
    }
    let Some(output) = &args.output else {
        if !imported.weights.is_empty() {
            return Err(format!(
                "{TOOL}: error: the model has constants too large to write inline; give -o FILE.tsr to write them to FILE.safetensors beside it"
            ));
        }
        if !imported.strings.all().is_empty() {
            return Err(format!(
                "{TOOL}: error: the model has constants of strings, which the module holds as ids; give -o FILE.tsr to write their strings to FILE.strings.json beside it"
            ));
        }
        return out
            .write_all(imported.text.as_bytes())
            .map_err(|e| format!("{TOOL}: error: cannot write the text: {e}"));
    };
    if let Some(side) = &side_path {
        if !imported.weights.is_empty() {
            write_safetensors(side, imported.weights.iter())
                .map_err(|e| format!("{TOOL}: error: {e}"))?;
        }
    }
    std::fs::write(output, &imported.text)
        .map_err(|e| format!("{TOOL}: error: cannot write '{}': {e}", output.display()))?;
    write_strings(&imported, output, err)
}

/// For a model with tensors of strings (which the module holds as `i64` ids): the strings of
/// its constants, by id, as a JSON array in `FILE.strings.json` beside `output`, and a note
/// naming the parameters and results that hold ids.
fn write_strings(imported: &Imported, output: &Path, err: &mut dyn Write) -> Result<(), String> {
    const TOOL: &str = "tessera-import";
    let params: Vec<&str> = imported
        .inputs
        .iter()
        .filter(|i| i.strings)
        .map(|i| i.param.as_str())
        .collect();
    let results: Vec<String> = imported
        .outputs
        .iter()
        .enumerate()
        .filter(|(_, o)| o.strings)
        .map(|(i, o)| format!("{i} ({})", o.label))
        .collect();
    if params.is_empty() && results.is_empty() && imported.strings.all().is_empty() {
        return Ok(());
    }
    let path = output.with_extension("strings.json");
    let json = serde_json::to_string_pretty(imported.strings.all())
        .map_err(|e| format!("{TOOL}: error: cannot write the strings: {e}"))?;
    std::fs::write(&path, json + "\n")
        .map_err(|e| format!("{TOOL}: error: cannot write '{}': {e}", path.display()))?;
    let _ = writeln!(
        err,
        "{TOOL}: note: the model's tensors of strings are i64 ids: its constants' strings are \
         listed by id in {} (parameters taking ids: {}; results holding them: {}); tessera-run \
         on the .onnx maps them itself",
        path.display(),
        if params.is_empty() {
            "none".into()
        } else {
            params.join(", ")
        },
        if results.is_empty() {
            "none".into()
        } else {
            results.join(", ")
        },
    );
    Ok(())
}
