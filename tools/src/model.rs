//! Models as every tool reads them: `.tsr` text, or an ONNX model (`.onnx`) imported on the
//! fly — the module then comes with the text it was verified from, which is exactly what
//! `tessera-import` writes, so diagnostics point into it.

use crate::registry;
use std::collections::BTreeMap;
use std::path::Path;
use tessera::diag::render_all;
use tessera::frontend::{decode, load};
use tessera::ir::Module;
use tessera::source::SourceFile;
use tessera_onnx::{import_file, ImportError, ImportOptions, Imported, InputShape, StringTable};

/// A loaded model.
pub struct Model {
    /// The text the module was verified from (the file, or the imported model's text).
    pub file: SourceFile,
    /// The verified module.
    pub module: Module,
    /// For an imported model: each graph input's name (`name[i]` for element `i` of a
    /// sequence input) and the parameter it became.
    pub aliases: Vec<(String, String)>,
    /// What the import decided that the user should know.
    pub notes: Vec<String>,
    /// For an imported model that takes or gives tensors of strings: which.
    pub strings: StringBoundary,
    /// For an imported model: what each result is (a graph output's name, `name[i]` for
    /// element `i` of a sequence output).
    pub output_labels: Vec<String>,
}

/// Where a model's tensors of strings cross into and out of the function, which takes and
/// gives their ids ([`StringTable`]).
#[derive(Clone, Debug, Default)]
pub struct StringBoundary {
    /// The parameters that take the ids of strings.
    pub params: Vec<String>,
    /// Whether each result holds the ids of strings.
    pub results: Vec<bool>,
    /// The model's own strings, by id: inputs are interned into a copy.
    pub table: StringTable,
}

/// True when `path` names an ONNX model (by its extension).
pub fn is_onnx(path: &Path) -> bool {
    path.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("onnx"))
}

/// `--input-shape` options as shapes by input name: `NAME=1x3x224x224` for a tensor (`NAME=`
/// for a scalar), `NAME=[2x3,5]` for a sequence of that many tensors (`NAME=[]` an empty
/// one), `NAME=none` for an optional input that holds no value.
pub fn input_shapes(specs: &[String], tool: &str) -> Result<BTreeMap<String, InputShape>, String> {
    let mut shapes = BTreeMap::new();
    for spec in specs {
        let bad = || {
            format!(
                "{tool}: error: --input-shape '{spec}' is not NAME=DxDx...D (for example \
                 x=1x3x224x224), NAME=[DxD,...] (a sequence) or NAME=none (an empty optional)"
            )
        };
        let (name, dims) = spec.rsplit_once('=').ok_or_else(bad)?;
        let tensor = |dims: &str| -> Result<Vec<u64>, String> {
            if dims.is_empty() {
                return Ok(Vec::new());
            }
            dims.split('x')
                .map(|d| d.parse::<u64>().map_err(|_| bad()))
                .collect()
        };
        let shape = if dims == "none" {
            InputShape::Absent
        } else if let Some(list) = dims.strip_prefix('[').and_then(|d| d.strip_suffix(']')) {
            let elements = if list.is_empty() {
                Vec::new()
            } else {
                list.split(',').map(tensor).collect::<Result<_, _>>()?
            };
            InputShape::Sequence(elements)
        } else {
            InputShape::Tensor(tensor(dims)?)
        };
        if shapes.insert(name.to_string(), shape).is_some() {
            return Err(format!("{tool}: error: --input-shape gives '{name}' twice"));
        }
    }
    Ok(shapes)
}

/// Imports the ONNX model at `path`, its large constants referring to `side_file`.
pub fn import_onnx(
    path: &Path,
    shapes: &[String],
    side_file: &str,
    tool: &str,
) -> Result<Imported, String> {
    let options = ImportOptions {
        input_shapes: input_shapes(shapes, tool)?,
        side_file: side_file.to_string(),
        source_name: format!("{} (imported)", path.display()),
        bound_inputs: BTreeMap::new(),
    };
    import_file(path, &options, &registry()).map_err(|e| match e {
        // Reading errors name the file themselves.
        ImportError::Read(_) => format!("{tool}: error: {e}"),
        e => format!("{tool}: error: {}: {e}", path.display()),
    })
}

/// The side file name an import of `path` refers to: its stem with `.safetensors`.
pub fn side_file_for(path: &Path) -> String {
    let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("model");
    format!("{stem}.safetensors")
}

/// Loads the model at `path` (`.tsr` or `.onnx`); errors rendered for the user.
pub fn load_model(path: &Path, shapes: &[String], tool: &str) -> Result<Model, String> {
    if is_onnx(path) {
        let imported = import_onnx(path, shapes, &side_file_for(path), tool)?;
        let file = SourceFile::new(format!("{} (imported)", path.display()), imported.text);
        let output_labels = imported.outputs.iter().map(|o| o.label.clone()).collect();
        let strings = StringBoundary {
            params: imported
                .inputs
                .iter()
                .filter(|i| i.strings)
                .map(|i| i.param.clone())
                .collect(),
            results: imported.outputs.iter().map(|o| o.strings).collect(),
            table: imported.strings,
        };
        return Ok(Model {
            file,
            module: imported.module,
            aliases: imported
                .inputs
                .into_iter()
                .map(|i| (i.label(), i.param))
                .collect(),
            notes: imported.notes,
            strings,
            output_labels,
        });
    }
    if !shapes.is_empty() {
        return Err(format!(
            "{tool}: error: --input-shape applies to ONNX models, not '{}'",
            path.display()
        ));
    }
    let name = path.display().to_string();
    let bytes =
        std::fs::read(path).map_err(|e| format!("{tool}: error: cannot read '{name}': {e}"))?;
    let (file, decode_error) = decode(&name, &bytes);
    if let Some(diag) = decode_error {
        return Err(diag.render(&file));
    }
    let module =
        load(&file, 0..file.text().len(), &registry()).map_err(|d| render_all(&d, &file))?;
    Ok(Model {
        file,
        module,
        aliases: Vec::new(),
        notes: Vec::new(),
        strings: StringBoundary::default(),
        output_labels: Vec::new(),
    })
}
