//! The fusion report: after fusion, which `.tsr` ops share each kernel (a top-level loop nest
//! of a function: a linalg op or a tiled loop), and for every op left alone, why. Ops are
//! recognized by the locations every MLIR op carries (`"%h"("model.tsr":4:3)`); fusion keeps
//! the payload's locations, so a fused kernel names all the ops it computes.

use crate::diag::Diagnostic;
use crate::ir::{Module, OpKind};
use crate::mlir::bridge::walk::{walk, WalkedOp};
use crate::mlir::cpu::tuning::FUSION_TUNING_ATTRIBUTE;
use crate::mlir::pipeline::runner::{run_pipeline, Instrumentation};
use crate::mlir::pipeline::stages::{Program, StageEnv};
use crate::mlir::pipeline::Pipeline;
use crate::source::Span;
use melior::ir::Module as MlirModule;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

/// One kernel of a function.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Kernel {
    /// The MLIR op (`linalg.generic`, `scf.forall`, ...).
    pub op: String,
    /// The `.tsr` lines of the ops it computes, in order.
    pub lines: BTreeSet<usize>,
    /// Why it is alone, when it computes a single `.tsr` op.
    pub alone_because: String,
    /// Whether its fusion is a tuning cache's choice.
    pub from_tuning_cache: bool,
}

/// A `.tsr` op's place in the report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpEntry {
    /// Its line.
    pub line: usize,
    /// Its result name (without `%`), or the callee for calls.
    pub name: String,
    /// `dialect.name` or `call`.
    pub op: String,
    /// `None` when fused with other ops; otherwise why not.
    pub unfused: Option<String>,
}

/// The report of one function.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FunctionReport {
    /// The function.
    pub name: String,
    /// Its kernels, in order.
    pub kernels: Vec<Kernel>,
    /// Every op of its body.
    pub ops: Vec<OpEntry>,
}

/// Runs `pipeline` on `program` (a tessera graph) up to its last fusion stage (or its
/// conversion, when it has none) and reports what was fused.
pub fn report_of_pipeline(
    program: Program<'_>,
    pipeline: &Pipeline,
    env: &StageEnv<'_, '_>,
    log: &mut dyn std::io::Write,
) -> Result<Vec<FunctionReport>, Vec<Diagnostic>> {
    let failure = |message: &str| vec![Diagnostic::error(Span::at(0), message.to_string())];
    let Program::Graph(graph) = &program else {
        return Err(failure(
            "a fusion report needs a tessera model (.tsr): it names the model's ops",
        ));
    };
    let graph = graph.clone();
    let names: Vec<String> = pipeline.elements.iter().map(|e| e.name()).collect();
    let last_fuse = names.iter().rposition(|n| n == "tessera-fuse");
    let end = last_fuse
        .or_else(|| names.iter().position(|n| n == "tessera-convert-to-linalg"))
        .ok_or_else(|| failure("a fusion report needs a pipeline that converts the model (tessera-convert-to-linalg)"))?;
    let prefix = Pipeline::parse(&pipeline.to_string())
        .map(|p| Pipeline {
            elements: p.elements.into_iter().take(end + 1).collect(),
        })
        .map_err(|e| failure(&e.message))?;
    let (lowered, _) = run_pipeline(program, &prefix, env, &Instrumentation::default(), log)
        .map_err(|f| f.diagnostics)?;
    let Program::Mlir(mlir) = lowered else {
        return Err(failure("the pipeline does not convert the model to MLIR"));
    };
    Ok(fusion_report(
        &mlir,
        &graph,
        |offset| env.file.line_col(offset).line,
        last_fuse.is_some(),
    ))
}

/// The report of `mlir`, the fused form of `graph`; `fusion_ran` says whether a fusion stage
/// ran at all.
pub fn fusion_report(
    mlir: &MlirModule<'_>,
    graph: &Module,
    file_lines: impl Fn(usize) -> usize,
    fusion_ran: bool,
) -> Vec<FunctionReport> {
    // Kernels by the raw pointer of their top-level op, grouped by function.
    let mut kernels: BTreeMap<(String, usize), Kernel> = BTreeMap::new();
    let mut order: Vec<(String, usize)> = Vec::new();
    let mut kept_apart = BTreeSet::new();
    walk(mlir, |op| {
        let Some((func, top)) = top_level(op) else {
            return;
        };
        let key = (func.clone(), top.raw().ptr as usize);
        let name = top.name();
        if !is_kernel(&name) {
            return;
        }
        let kernel = kernels.entry(key.clone()).or_insert_with(|| {
            order.push(key.clone());
            let mut lines = BTreeSet::new();
            if tuning_cache_choice(&top) == Some(false) {
                // A contraction or epilogue the cache keeps apart computes its own op; its
                // location may also name what elementwise fusion folded into it (the
                // other's empty tensor), which is no fusion.
                lines.extend(origin_lines(&top.location()).first());
                kept_apart.insert(key.clone());
            }
            Kernel {
                op: name.clone(),
                lines,
                alone_because: reason(&top, fusion_ran),
                from_tuning_cache: false,
            }
        });
        if kept_apart.contains(&key) {
            return;
        }
        kernel.from_tuning_cache |= tuning_cache_choice(op) == Some(true);
        kernel.lines.extend(origin_lines(&op.location()));
    });
    graph
        .funcs
        .iter()
        .map(|func| {
            // Only the lines of ops count (parameters have locations too).
            let op_lines: BTreeSet<usize> = func.ops.iter().map(|op| file_lines(op.span.start)).collect();
            let kernels: Vec<Kernel> = order
                .iter()
                .filter(|(f, _)| *f == func.name)
                .filter_map(|key| kernels.get(key).cloned())
                .map(|mut k| {
                    k.lines.retain(|l| op_lines.contains(l));
                    k
                })
                .filter(|k| !k.lines.is_empty())
                .collect();
            let ops = func
                .ops
                .iter()
                .map(|op| {
                    let line = file_lines(op.span.start);
                    let (name, kind) = match op.kind {
                        OpKind::Dialect(def) => (func.value(op.results[0]).name.clone(), def.schema().full_name()),
                        OpKind::Call(callee) => (graph.funcs[callee].name.clone(), "call".to_string()),
                    };
                    let mine: Vec<&Kernel> = kernels.iter().filter(|k| k.lines.contains(&line)).collect();
                    let unfused = if mine.iter().any(|k| k.lines.len() > 1) {
                        None
                    } else if let Some(k) = mine.first() {
                        Some(k.alone_because.clone())
                    } else if matches!(op.kind, OpKind::Call(_)) {
                        Some("a call: the callee is compiled as its own function".to_string())
                    } else {
                        Some("no loop nest of its own: a constant, or a layout change that becomes tensor ops".to_string())
                    };
                    OpEntry { line, name, op: kind, unfused }
                })
                .collect();
            FunctionReport { name: func.name.clone(), kernels, ops }
        })
        .collect()
}

/// The function (by name) and the top-level op of its body that contains `op` (or is it).
fn top_level<'c>(op: &WalkedOp<'c>) -> Option<(String, WalkedOp<'c>)> {
    let mut child = op.raw();
    let mut current = op.parent()?;
    loop {
        if current.name() == "func.func" {
            let name = current
                .attribute("sym_name")?
                .to_string()
                .trim_matches('"')
                .to_string();
            return Some((name, WalkedOp::from_raw(child)));
        }
        child = current.raw();
        current = current.parent()?;
    }
}

/// Whether a top-level op is a loop nest worth reporting (fills only initialize).
fn is_kernel(name: &str) -> bool {
    (name.starts_with("linalg.") && name != "linalg.fill")
        || name == "scf.forall"
        || name == "scf.for"
}

/// Whether `op`'s fusion is a tuning cache's choice, and if so whether it is fused.
fn tuning_cache_choice(op: &WalkedOp<'_>) -> Option<bool> {
    let mark = op.attribute(FUSION_TUNING_ATTRIBUTE)?.to_string();
    mark.contains("source = \"tuning cache\"")
        .then(|| mark.contains("fuse = true"))
}

/// Why a kernel computes only one `.tsr` op.
fn reason(kernel: &WalkedOp<'_>, fusion_ran: bool) -> String {
    if !fusion_ran {
        return "fusion is off in this pipeline (-O0 or --no-fusion)".into();
    }
    if tuning_cache_choice(kernel) == Some(false) {
        return "the tuning cache keeps this contraction and its epilogue apart: tessera-tune measured them faster as two kernels".into();
    }
    let name = kernel.name();
    let users = kernel.use_count();
    let reduces = kernel.generic_reduces() == Some(true);
    match (name.as_str(), users) {
        ("linalg.generic", _) if reduces => {
            "a reduction: its users need its complete result, so they cannot share its loop nest".into()
        }
        ("linalg.generic", n) if n > 1 => format!("an elementwise op with {n} users: fusion does not duplicate it into each"),
        ("linalg.generic", _) => "no neighbour to fuse with: its producers and users are not elementwise ops it could join".into(),
        ("scf.forall" | "scf.for", n) if n > 1 => {
            format!("its tiled kernel has {n} users: fusing it into each would compute it {n} times")
        }
        ("scf.forall" | "scf.for", _) => "its tiled kernel's user is not elementwise: nothing more to fuse into its tiles".into(),
        (other, _) if !["linalg.matmul", "linalg.batch_matmul", "linalg.conv_2d_nhwc_hwcf"].contains(&other) => {
            format!("a {other}: elementwise fusion does not merge it, and it is not a matmul or convolution with an epilogue")
        }
        (other, n) if n > 1 => format!("a {other} with {n} users: fusing it into each would compute it {n} times"),
        (other, 0) => format!("a {other} whose result is returned: there is no epilogue to fuse"),
        (other, _) => format!("a {other} whose user is not elementwise: epilogue fusion takes elementwise users only"),
    }
}

/// The `.tsr` lines named in an MLIR location's text (`"%h"("m.tsr":4:3)`, fused or not).
fn origin_lines(location: &str) -> Vec<usize> {
    location
        .match_indices("\"%")
        .filter_map(|(at, _)| {
            let rest = &location[at..];
            let position = rest.split_once("\":")?.1;
            let numbers: Vec<usize> = position
                .split(|c: char| !c.is_ascii_digit())
                .filter_map(|s| s.parse().ok())
                .take(1)
                .collect();
            numbers.first().copied()
        })
        .collect()
}

/// The report as text: kernels with their ops, then the ops left alone with the reason.
pub fn report_text(reports: &[FunctionReport]) -> String {
    let mut out = String::new();
    for f in reports {
        let _ = writeln!(out, "@{}: {} kernel(s)", f.name, f.kernels.len());
        let name_of = |line: usize| {
            f.ops
                .iter()
                .find(|o| o.line == line)
                .map_or(format!("line {line}"), |o| {
                    format!("%{} (line {line}, {})", o.name, o.op)
                })
        };
        for (i, k) in f.kernels.iter().enumerate() {
            let members: Vec<String> = k.lines.iter().map(|&l| name_of(l)).collect();
            let tuned = if k.from_tuning_cache {
                " [fused as the tuning cache says]"
            } else {
                ""
            };
            let _ = writeln!(
                out,
                "  kernel {} ({}): {}{tuned}",
                i + 1,
                k.op,
                members.join(", ")
            );
        }
        let unfused: Vec<&OpEntry> = f.ops.iter().filter(|o| o.unfused.is_some()).collect();
        if !unfused.is_empty() {
            let _ = writeln!(out, "  not fused:");
            for o in unfused {
                let _ = writeln!(
                    out,
                    "    %{} (line {}, {}): {}",
                    o.name,
                    o.line,
                    o.op,
                    o.unfused.as_deref().unwrap_or_default()
                );
            }
        }
    }
    out
}

/// The report as JSON: `{"functions": [{"name", "kernels": [{"op", "lines"}], "ops": [{"line",
/// "name", "op", "fused", "reason"}]}]}`.
pub fn report_json(reports: &[FunctionReport]) -> String {
    let quote = |s: &str| format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""));
    let functions: Vec<String> = reports
        .iter()
        .map(|f| {
            let kernels: Vec<String> = f
                .kernels
                .iter()
                .map(|k| {
                    let lines: Vec<String> = k.lines.iter().map(usize::to_string).collect();
                    format!(
                        "{{\"op\": {}, \"lines\": [{}], \"tuning_cache\": {}}}",
                        quote(&k.op),
                        lines.join(", "),
                        k.from_tuning_cache
                    )
                })
                .collect();
            let ops: Vec<String> = f
                .ops
                .iter()
                .map(|o| {
                    let reason = o.unfused.as_deref().map_or("null".to_string(), quote);
                    format!(
                        "{{\"line\": {}, \"name\": {}, \"op\": {}, \"fused\": {}, \"reason\": {reason}}}",
                        o.line,
                        quote(&o.name),
                        quote(&o.op),
                        o.unfused.is_none()
                    )
                })
                .collect();
            format!("{{\"name\": {}, \"kernels\": [{}], \"ops\": [{}]}}", quote(&f.name), kernels.join(", "), ops.join(", "))
        })
        .collect();
    format!("{{\"functions\": [{}]}}\n", functions.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_lines_of_plain_and_fused_locations() {
        assert_eq!(origin_lines(r#"loc("%h"("m.tsr":4:3))"#), [4]);
        assert_eq!(
            origin_lines(r#"loc(fused["%a"("m.tsr":4:3), "%b"("m.tsr":7:3)])"#),
            [4, 7]
        );
        assert!(origin_lines(r#"loc("m.tsr":1:1)"#).is_empty());
    }
}
