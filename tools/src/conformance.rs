//! `tessera-onnx-conformance`: the ONNX backend node tests (as `scripts/onnx_node_tests.py`
//! writes them) imported, compiled and run, every output compared with the expected one at
//! the case's tolerance; pass, fail or unsupported per case, per op and in total.

use crate::registry;
use clap::Parser;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use tessera::crash::Activity;
use tessera::exec::tensor::{Tensor, TensorData};
use tessera::mlir::cpu::compile::{compile, jit_options};
use tessera::mlir::pipeline::Pipeline;
use tessera::mlir::MlirContext;
use tessera::source::SourceFile;
use tessera::types::ElementType;
use tessera_onnx::proto::ValueInfoProto;
use tessera_onnx::{
    import, read_model, read_tensor, read_value, ImportError, ImportOptions, Imported, InputShape,
    StoredTensor, StoredValue, StringTable,
};

/// The most bytes one test tensor may take.
const TENSOR_LIMIT: u64 = 1 << 30;

/// Command-line options of `tessera-onnx-conformance`.
#[derive(Parser, Debug)]
#[command(
    name = "tessera-onnx-conformance",
    version,
    about = "Run the ONNX backend node tests through tessera: pass, fail or unsupported per op.",
    after_help = "\
DIR holds one folder per case (model.onnx, test_data_set_0/input_J.pb and output_J.pb,
tolerance.txt), as scripts/onnx_node_tests.py writes them; scripts/onnx-conformance.sh does
both. Where the importer needs an input's value (a shape, axes, indices) to compile for static
shapes, the case's integer inputs and vectors (rank 0 or 1) are bound to their test values at
import time. A case passes when every output has the expected type and its elements are within
atol + rtol * |expected| (NaN matching NaN; for bf16 outputs rtol is at least 2^-6, two bf16
ulps, as in onnx's own runner); it is unsupported when the importer lists a node
tessera cannot import or a value of a type tessera lacks; it fails otherwise.

Exit status: 0 when it ran (whatever the results), 1 when DIR cannot be read."
)]
pub struct ConformanceArgs {
    /// The folder of test cases.
    pub dir: PathBuf,
    /// The preset the cases are compiled with.
    #[arg(short = 'O', value_name = "LEVEL", default_value_t = 3, value_parser = clap::value_parser!(u8).range(0..=3))]
    pub opt_level: u8,
    /// Only the cases whose name contains this text.
    #[arg(long)]
    pub filter: Option<String>,
    /// Write the per-op table (Markdown) to this file.
    #[arg(long, value_name = "FILE")]
    pub markdown: Option<PathBuf>,
    /// Print every case's outcome, not only the failures.
    #[arg(long)]
    pub verbose: bool,
    /// Also run onnx's light models in this folder (its `backend/test/data/light`: AlexNet,
    /// DenseNet-121, Inception, ResNet-50, ...) at -O0 and -O3.
    #[arg(long, value_name = "DIR")]
    pub models: Option<PathBuf>,
}

/// How one case went.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// Every output matched.
    Pass,
    /// Imported but wrong, or not imported for a reason other than a missing feature.
    Fail(String),
    /// Uses an op, a form of one or a type tessera does not import.
    Unsupported(String),
}

/// One case's result.
#[derive(Clone, Debug)]
pub struct CaseResult {
    /// The case's folder name (`test_add_bcast`).
    pub name: String,
    /// The op it tests.
    pub op: String,
    /// How it went.
    pub outcome: Outcome,
}

/// The case folders of `dir` whose names contain `filter`, sorted.
pub fn case_dirs(dir: &Path, filter: Option<&str>) -> Result<Vec<PathBuf>, String> {
    let mut cases: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| format!("cannot read '{}': {e}", dir.display()))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("model.onnx").is_file())
        .filter(|p| {
            filter.is_none_or(|f| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.contains(f))
            })
        })
        .collect();
    cases.sort();
    Ok(cases)
}

/// The op a case tests: its node's op type, or for an `_expanded` case (a function's body)
/// that of the case it expands.
fn op_of(case: &Path) -> String {
    let name = case.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let model = |dir: &Path| read_model(&dir.join("model.onnx")).ok();
    if let Some(stem) = name
        .split("_expanded")
        .next()
        .filter(|_| name.contains("_expanded"))
    {
        if let Some(m) = case.parent().and_then(|p| model(&p.join(stem))) {
            if let Some(node) = m.graph.as_ref().and_then(|g| g.node.first()) {
                return node.op_type.clone();
            }
        }
    }
    model(case)
        .and_then(|m| {
            m.graph
                .and_then(|g| g.node.first().map(|n| n.op_type.clone()))
        })
        .unwrap_or_else(|| "?".into())
}

/// The tolerance of a case (`rtol atol` in `tolerance.txt`; else onnx's defaults).
fn tolerance(case: &Path) -> (f64, f64) {
    std::fs::read_to_string(case.join("tolerance.txt"))
        .ok()
        .and_then(|t| {
            let mut parts = t.split_whitespace().map(str::parse::<f64>);
            Some((parts.next()?.ok()?, parts.next()?.ok()?))
        })
        .unwrap_or((1e-3, 1e-7))
}

/// The relative tolerance onnx's backend runner gives bf16 outputs at least: two ulps.
const BF16_RTOL: f64 = 1.0 / 64.0;

/// Why `got` differs from `want` beyond `atol + rtol |want|`, if it does.
fn mismatch(got: &Tensor, want: &Tensor, rtol: f64, atol: f64) -> Option<String> {
    if got.ty != want.ty {
        return Some(format!("is {}, expected {}", got.ty, want.ty));
    }
    // onnx's own runner allows bf16 outputs two bf16 ulps (rtol 2^-6): the cases' default
    // rtol of 1e-3 is a quarter of one.
    let rtol = if want.ty.element == ElementType::BF16 {
        rtol.max(BF16_RTOL)
    } else {
        rtol
    };
    let exact = !matches!(want.data, TensorData::Float(_));
    for i in 0..want.len() {
        let (g, w) = (got.get_f64(i), want.get_f64(i));
        let ok = if exact {
            g == w
        } else if w.is_nan() || g.is_nan() {
            w.is_nan() && g.is_nan()
        } else if w.is_infinite() || g.is_infinite() {
            g == w
        } else {
            (g - w).abs() <= atol + rtol * w.abs()
        };
        if !ok {
            return Some(format!("element {i} is {g}, expected {w}"));
        }
    }
    None
}

/// True when an import error says tessera lacks something (rather than that it is wrong).
fn lacks_feature(error: &ImportError) -> Option<String> {
    match error {
        ImportError::Unsupported(nodes) => Some(
            nodes
                .iter()
                .map(|n| format!("{}: {}", n.node, n.reason))
                .collect::<Vec<_>>()
                .join("; "),
        ),
        ImportError::Model(m)
            if m.contains("tessera has no type for") || m.contains("tessera takes") =>
        {
            Some(m.clone())
        }
        _ => None,
    }
}

/// What the importer says of an input it needs at import time.
const KNOWN_AT_IMPORT: &str = "tessera needs it known at import time";

/// The case's integer tensors and vectors among its input `values`, by graph input name: the
/// values an importer may need (shapes, axes, indices, a depth, scales, a region).
fn integer_inputs(values: &[(String, StoredValue)]) -> BTreeMap<String, Tensor> {
    values
        .iter()
        .filter_map(|(name, value)| match value {
            StoredValue::Tensor(StoredTensor::Numbers(t))
                if matches!(t.data, TensorData::Int(_)) || t.ty.rank() <= 1 =>
            {
                Some((name.clone(), t.clone()))
            }
            _ => None,
        })
        .collect()
}

/// The input values of the case in folder `case` (of `model`), by graph input name.
pub fn case_inputs(
    case: &Path,
    model: &tessera_onnx::proto::ModelProto,
) -> Result<Vec<(String, StoredValue)>, Outcome> {
    let data = case.join("test_data_set_0");
    let infos = model
        .graph
        .as_ref()
        .map(|g| g.input.as_slice())
        .unwrap_or_default();
    stored_values(infos, &existing(|j| data.join(format!("input_{j}.pb"))))
}

/// The shapes the inputs `values` fix at import time: symbolic dimensions, sequence lengths
/// and whether optionals hold a value, as the values have them.
pub fn input_shapes(values: &[(String, StoredValue)]) -> BTreeMap<String, InputShape> {
    values
        .iter()
        .map(|(name, value)| (name.clone(), value.shape()))
        .collect()
}

/// The values in files `path(0)`, `path(1)`, ... of the types `infos` declare, by name.
fn stored_values(
    infos: &[ValueInfoProto],
    paths: &[PathBuf],
) -> Result<Vec<(String, StoredValue)>, Outcome> {
    paths
        .iter()
        .enumerate()
        .map(|(j, path)| {
            let info = infos.get(j);
            match read_value(path, info.and_then(|i| i.r#type.as_ref()), TENSOR_LIMIT) {
                Ok((name, value)) => Ok((info.map_or(name, |i| i.name.clone()), value)),
                Err(e) if e.contains("tessera has no type for") => Err(Outcome::Unsupported(e)),
                Err(e) => Err(Outcome::Fail(e)),
            }
        })
        .collect()
}

/// Runs the case in folder `case` at `opt_level`.
pub fn run_case(context: &MlirContext, case: &Path, opt_level: u8) -> Outcome {
    if case.join("non_tensor").exists() {
        return Outcome::Unsupported("map values".into());
    }
    let name = case.display().to_string();
    let model = match read_model(&case.join("model.onnx")) {
        Ok(model) => model,
        Err(e) => return Outcome::Fail(e.to_string()),
    };
    let data = case.join("test_data_set_0");
    let graph = model.graph.clone().unwrap_or_default();
    let values = match case_inputs(case, &model) {
        Ok(values) => values,
        Err(outcome) => return outcome,
    };
    let mut options = ImportOptions {
        input_shapes: input_shapes(&values),
        side_file: "model.safetensors".into(),
        source_name: format!("{name}/model.onnx (imported)"),
        bound_inputs: BTreeMap::new(),
    };
    let mut imported = import(&model, &options, &registry());
    if imported
        .as_ref()
        .err()
        .and_then(lacks_feature)
        .is_some_and(|why| why.contains(KNOWN_AT_IMPORT))
    {
        // A shape, axes or indices input: tessera compiles for static shapes, so it is bound
        // to the case's value at import time, as a model's own constant would be.
        options.bound_inputs = integer_inputs(&values);
        imported = import(&model, &options, &registry());
    }
    let imported = match imported {
        Ok(imported) => imported,
        Err(e) => {
            return match lacks_feature(&e) {
                Some(why) => Outcome::Unsupported(why),
                None => Outcome::Fail(e.to_string()),
            }
        }
    };
    // String inputs are interned into the import's table, string outputs read back from it.
    let mut strings = imported.strings.clone();
    let mut given: BTreeMap<&str, Vec<Tensor>> = BTreeMap::new();
    for (name, value) in &values {
        let parts = value.clone().into_parts();
        let tensors = parts.into_iter().map(|t| t.into_tensor(&mut strings));
        given.insert(name.as_str(), tensors.collect());
    }
    let inputs: Option<Vec<Tensor>> = imported
        .inputs
        .iter()
        .map(|input| {
            given
                .get(input.onnx_name.as_str())
                .and_then(|tensors| tensors.get(input.element.unwrap_or(0)))
                .cloned()
        })
        .collect();
    let Some(inputs) = inputs else {
        return Outcome::Fail("the test data lacks an input".into());
    };
    let outputs = match stored_values(
        &graph.output,
        &existing(|j| data.join(format!("output_{j}.pb"))),
    ) {
        Ok(outputs) => outputs
            .into_iter()
            .flat_map(|(_, value)| value.into_parts())
            .collect(),
        Err(outcome) => return outcome,
    };
    let expected = Expected {
        outputs,
        tolerance: tolerance(case),
    };
    check_outputs(
        context, &imported, &name, &strings, &inputs, &expected, opt_level,
    )
}

/// The files `path(0)`, `path(1)`, ... up to the first that does not exist.
fn existing(path: impl Fn(usize) -> PathBuf) -> Vec<PathBuf> {
    (0..).map(path).take_while(|p| p.exists()).collect()
}

/// What a case's outputs must be: these tensors (a sequence output's elements in order),
/// within `atol + rtol |x|`; tensors of strings equal.
struct Expected {
    outputs: Vec<StoredTensor>,
    tolerance: (f64, f64),
}

/// Compiles `imported` at `opt_level`, calls it on `inputs` and compares its outputs with the
/// `expected` ones (string outputs read through `strings`).
fn check_outputs(
    context: &MlirContext,
    imported: &Imported,
    name: &str,
    strings: &StringTable,
    inputs: &[Tensor],
    expected: &Expected,
    opt_level: u8,
) -> Outcome {
    let (rtol, atol) = expected.tolerance;
    let expected = &expected.outputs;
    let file = SourceFile::new(format!("{name} (imported)"), imported.text.clone());
    let module = &imported.module;
    let pipeline = Pipeline::preset(opt_level, true);
    let _activity = Activity::enter("the conformance case", name, None);
    let jit = match compile(
        context,
        module,
        &file,
        &pipeline,
        jit_options(module, &pipeline),
    ) {
        Ok((jit, _)) => jit,
        Err(diags) => {
            return Outcome::Fail(format!(
                "does not compile: {}",
                diags.first().map_or(String::new(), |d| d.message.clone())
            ))
        }
    };
    let func = &module.funcs[0];
    let got = match jit.call(&func.name, inputs) {
        Ok(got) => got,
        Err(e) => return Outcome::Fail(format!("the call failed: {e}")),
    };
    if got.len() != expected.len() {
        return Outcome::Fail(format!(
            "{} outputs, expected {}",
            got.len(),
            expected.len()
        ));
    }
    for ((g, want), output) in got.iter().zip(expected).zip(&imported.outputs) {
        let why = match want {
            StoredTensor::Numbers(want) => mismatch(g, want, rtol, atol),
            StoredTensor::Strings(shape, want) => match strings.strings(g) {
                Ok(texts) if &g.ty.shape != shape => Some(format!(
                    "has shape {:?}, expected {shape:?} ({texts:?})",
                    g.ty.shape
                )),
                Ok(texts) => (&texts != want).then(|| format!("is {texts:?}, expected {want:?}")),
                Err(e) => Some(e),
            },
        };
        if let Some(why) = why {
            return Outcome::Fail(format!("output '{}' {why}", output.label));
        }
    }
    Outcome::Pass
}

/// The models of `dir` that the onnx package keeps with their expected outputs (its
/// `backend/test/data/light`: `light_NAME.onnx` beside `light_NAME_output_0.pb`), sorted.
pub fn light_models(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let mut models: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| format!("cannot read '{}': {e}", dir.display()))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "onnx"))
        .filter(|p| p.with_file_name(output_name(p, 0)).exists())
        .collect();
    models.sort();
    Ok(models)
}

/// `light_NAME_output_J.pb` for model `light_NAME.onnx`.
fn output_name(model: &Path, j: usize) -> String {
    let stem = model.file_stem().and_then(|s| s.to_str()).unwrap_or("");
    format!("{stem}_output_{j}.pb")
}

/// Runs one of onnx's light models at `opt_level` as onnx's backend runner does: each input
/// (symbolic dimensions 1) holds `0, 1/n, 2/n, ...` in row-major order, the outputs are
/// compared with the stored ones at onnx's default tolerance (rtol 1e-3, atol 1e-7).
pub fn run_light_model(context: &MlirContext, model: &Path, opt_level: u8) -> Outcome {
    let name = model.display().to_string();
    let options = ImportOptions {
        input_shapes: BTreeMap::new(),
        side_file: "model.safetensors".into(),
        source_name: format!("{name} (imported)"),
        bound_inputs: BTreeMap::new(),
    };
    let imported = match tessera_onnx::import_file(model, &options, &registry()) {
        Ok(imported) => imported,
        Err(e) => {
            return match lacks_feature(&e) {
                Some(why) => Outcome::Unsupported(why),
                None => Outcome::Fail(e.to_string()),
            }
        }
    };
    let func = &imported.module.funcs[0];
    let inputs: Vec<Tensor> = func
        .param_types()
        .map(|ty| {
            let n = ty.num_elements().unwrap_or(0);
            Tensor::from_numbers(ty, (0..n).map(|i| (i as f64 / n as f64) as f32 as f64))
        })
        .collect();
    let mut outputs = Vec::new();
    for path in existing(|j| model.with_file_name(output_name(model, j))) {
        match read_tensor(&path, TENSOR_LIMIT) {
            Ok((_, t)) => outputs.push(StoredTensor::Numbers(t)),
            Err(e) => return Outcome::Fail(e),
        }
    }
    let expected = Expected {
        outputs,
        tolerance: (1e-3, 1e-7),
    };
    let strings = &imported.strings;
    check_outputs(
        context, &imported, &name, strings, &inputs, &expected, opt_level,
    )
}

/// Counts of one op's cases.
#[derive(Clone, Copy, Debug, Default)]
pub struct Counts {
    /// Cases that passed.
    pub pass: usize,
    /// Cases that failed.
    pub fail: usize,
    /// Cases tessera cannot import.
    pub unsupported: usize,
}

impl Counts {
    fn add(&mut self, outcome: &Outcome) {
        match outcome {
            Outcome::Pass => self.pass += 1,
            Outcome::Fail(_) => self.fail += 1,
            Outcome::Unsupported(_) => self.unsupported += 1,
        }
    }

    fn total(self) -> usize {
        self.pass + self.fail + self.unsupported
    }
}

/// Per-op counts of `results`, and the totals.
pub fn tally(results: &[CaseResult]) -> (BTreeMap<String, Counts>, Counts) {
    let mut per_op: BTreeMap<String, Counts> = BTreeMap::new();
    let mut total = Counts::default();
    for r in results {
        per_op.entry(r.op.clone()).or_default().add(&r.outcome);
        total.add(&r.outcome);
    }
    (per_op, total)
}

/// The results as a Markdown report: totals, then one row per op.
pub fn markdown(results: &[CaseResult], opt_level: u8) -> String {
    let (per_op, total) = tally(results);
    let supported = tessera_onnx::ops::op_types();
    let (mut declared, mut declared_pass) = (0, 0);
    for (op, c) in &per_op {
        if supported.contains(&op.as_str()) {
            declared += c.total();
            declared_pass += c.pass;
        }
    }
    let percent = |a: usize, b: usize| {
        if b == 0 {
            0.0
        } else {
            100.0 * a as f64 / b as f64
        }
    };
    let mut out = String::new();
    let _ = writeln!(out, "# ONNX backend node tests through tessera\n");
    let _ = writeln!(
        out,
        "Generated by `scripts/onnx-conformance.sh` (cases from the `onnx` package's \
         `onnx.backend.test.case.node`, compiled at -O{opt_level}, each output compared at the \
         case's tolerance). Do not edit by hand.\n"
    );
    let _ = writeln!(
        out,
        "- all cases: {} of {} pass ({:.1}%), {} fail, {} unsupported",
        total.pass,
        total.total(),
        percent(total.pass, total.total()),
        total.fail,
        total.unsupported
    );
    let _ = writeln!(
        out,
        "- cases of the {} ops tessera imports: {} of {} pass ({:.1}%)\n",
        supported.len(),
        declared_pass,
        declared,
        percent(declared_pass, declared)
    );
    let _ = writeln!(out, "| op | imported | cases | pass | fail | unsupported |");
    let _ = writeln!(out, "|---|---|---|---|---|---|");
    for (op, c) in &per_op {
        let imported = if supported.contains(&op.as_str()) {
            "yes"
        } else {
            ""
        };
        let _ = writeln!(
            out,
            "| {op} | {imported} | {} | {} | {} | {} |",
            c.total(),
            c.pass,
            c.fail,
            c.unsupported
        );
    }
    let failures: Vec<&CaseResult> = results
        .iter()
        .filter(|r| matches!(r.outcome, Outcome::Fail(_)))
        .collect();
    if !failures.is_empty() {
        let _ = writeln!(
            out,
            "\n## Failing cases\n\nThose tessera knows of are listed with their measured cause in \
             `testdata/onnx/conformance-known-failures.txt`.\n"
        );
        for r in failures {
            if let Outcome::Fail(why) = &r.outcome {
                let _ = writeln!(out, "- `{}` ({}): {}", r.name, r.op, why.replace('\n', " "));
            }
        }
    }
    out
}

/// Runs `tessera-onnx-conformance`.
pub fn run(args: &ConformanceArgs, out: &mut dyn Write, err: &mut dyn Write) -> ExitCode {
    let cases = match case_dirs(&args.dir, args.filter.as_deref()) {
        Ok(cases) => cases,
        Err(e) => {
            let _ = writeln!(err, "tessera-onnx-conformance: error: {e}");
            return ExitCode::FAILURE;
        }
    };
    let context = MlirContext::new();
    let mut results = Vec::with_capacity(cases.len());
    for case in &cases {
        let outcome = run_case(&context, case, args.opt_level);
        let name = case
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("?")
            .to_string();
        let result = CaseResult {
            op: op_of(case),
            name,
            outcome,
        };
        match &result.outcome {
            Outcome::Fail(why) => {
                let _ = writeln!(
                    out,
                    "FAIL {} ({}): {}",
                    result.name,
                    result.op,
                    why.lines().next().unwrap_or("")
                );
            }
            outcome if args.verbose => {
                let _ = writeln!(out, "{outcome:?} {}", result.name);
            }
            _ => {}
        }
        results.push(result);
    }
    let mut report = markdown(&results, args.opt_level);
    if let Some(dir) = &args.models {
        let models = match light_models(dir) {
            Ok(models) => models,
            Err(e) => {
                let _ = writeln!(err, "tessera-onnx-conformance: error: {e}");
                return ExitCode::FAILURE;
            }
        };
        let _ = writeln!(report, "\n## Real architectures\n");
        let _ = writeln!(
            report,
            "onnx's light models (`onnx/backend/test/data/light`: full architectures whose \
             weights are fills), inputs and expected outputs as onnx's backend runner makes \
             them.\n"
        );
        let _ = writeln!(report, "| model | -O0 | -O3 |");
        let _ = writeln!(report, "|---|---|---|");
        for model in &models {
            let name = model.file_stem().and_then(|s| s.to_str()).unwrap_or("?");
            let cells: Vec<String> = [0, 3]
                .map(|level| match run_light_model(&context, model, level) {
                    Outcome::Pass => "pass".to_string(),
                    Outcome::Fail(why) => format!("FAIL: {}", why.lines().next().unwrap_or("")),
                    Outcome::Unsupported(why) => format!("unsupported: {why}"),
                })
                .to_vec();
            let _ = writeln!(report, "| {name} | {} | {} |", cells[0], cells[1]);
        }
    }
    let _ = write!(out, "{report}");
    if let Some(path) = &args.markdown {
        if let Err(e) = std::fs::write(path, &report) {
            let _ = writeln!(
                err,
                "tessera-onnx-conformance: error: cannot write '{}': {e}",
                path.display()
            );
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}
