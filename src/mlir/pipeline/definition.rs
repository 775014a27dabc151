//! Pipelines in MLIR's textual syntax, `builtin.module(a, b{key=value}, func.func(c))`, mixing
//! tessera's stages (with their options) and any registered upstream pass; the presets
//! `-O0`..`-O3`. A pipeline prints back in the same syntax, so the expansion of a preset can be
//! reused verbatim.

use crate::diag::Diagnostic;
use crate::mlir::pipeline::stages::{stage, stages, Stage, StageOptions};
use crate::mlir::pipeline::target::Target;
use crate::source::{SourceFile, Span};
use crate::suggest::did_you_mean;
use std::fmt;
use std::sync::Arc;

/// The upstream passes and pass pipelines MLIR 19 registers (from `mlir-opt --help`): name,
/// tab, one-line summary. For `--list-passes` and "did you mean".
pub const UPSTREAM_PASSES: &str = include_str!("upstream_passes.tsv");

/// One step of a pipeline.
pub enum Element {
    /// A tessera stage and its options.
    Stage(&'static dyn Stage, StageOptions),
    /// Upstream passes, as written (`canonicalize`, `func.func(cse)`,
    /// `linalg-fuse-elementwise-ops{...}`); MLIR parses and runs them.
    Upstream(String),
}

impl Element {
    /// The step's name (`tessera-fuse`, `canonicalize`, `func.func`).
    pub fn name(&self) -> String {
        match self {
            Element::Stage(stage, _) => stage.name().to_string(),
            Element::Upstream(text) => text
                .split(['{', '('])
                .next()
                .unwrap_or(text)
                .trim()
                .to_string(),
        }
    }
}

impl fmt::Display for Element {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Element::Stage(stage, options) if options.0.is_empty() => f.write_str(stage.name()),
            Element::Stage(stage, options) => {
                let pairs: Vec<String> =
                    options.0.iter().map(|(k, v)| format!("{k}={v}")).collect();
                write!(f, "{}{{{}}}", stage.name(), pairs.join(" "))
            }
            Element::Upstream(text) => f.write_str(text),
        }
    }
}

/// A sequence of steps over a module.
#[derive(Default)]
pub struct Pipeline {
    /// The steps, in order.
    pub elements: Vec<Element>,
}

impl fmt::Display for Pipeline {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let elements: Vec<String> = self.elements.iter().map(ToString::to_string).collect();
        write!(f, "builtin.module({})", elements.join(","))
    }
}

impl Pipeline {
    /// The CPU's preset `-O<level>`: `-O0` converts, bufferizes and lowers op by op (every
    /// intermediate materialized); `-O1` adds fusion; `-O2` tiling; `-O3` vectorization.
    /// `fusion = false` removes the fusion stage and keeps the rest (`--no-fusion`).
    pub fn preset(level: u8, fusion: bool) -> Pipeline {
        Pipeline::preset_for(Target::Cpu, level, fusion, None)
    }

    /// The preset `-O<level>` for `target`: the conversion, fusion from `-O1` (unless
    /// `fusion` is false), the target's stages before bufferization (the CPU's tiling from
    /// `-O2`, vectorization at `-O3`), bufferization, the target's lowering. A `schedule`
    /// (a file of a transform-dialect schedule) replaces the tiling and vectorization.
    pub fn preset_for(target: Target, level: u8, fusion: bool, schedule: Option<&str>) -> Pipeline {
        let mut names = vec!["tessera-convert-to-linalg"];
        if level >= 1 && fusion {
            names.push("tessera-fuse");
        }
        if schedule.is_none() {
            names.extend(target.before_bufferization(level));
        }
        let mut elements: Vec<Element> = names
            .into_iter()
            .filter_map(stage)
            .map(|s| Element::Stage(s, StageOptions::default()))
            .collect();
        if let (Some(path), Some(apply)) = (schedule, stage("tessera-apply-schedule")) {
            let options = StageOptions([("file".to_string(), path.to_string())].into());
            elements.push(Element::Stage(apply, options));
        }
        let last = std::iter::once("tessera-bufferize")
            .chain(target.after_bufferization().iter().copied());
        for last in last.filter_map(stage) {
            elements.push(Element::Stage(last, StageOptions::default()));
        }
        Pipeline { elements }
    }

    /// The pipeline run on `threads` threads: `tessera-parallelize{threads=N}` after
    /// bufferization, when `threads` is more than one and the pipeline bufferizes (a
    /// preset's does), and `tessera-tile{threads=N}`, which splits some matmuls into one run
    /// of columns per thread.
    pub fn with_threads(mut self, threads: usize) -> Pipeline {
        let Some(at) = self
            .elements
            .iter()
            .position(|e| e.name() == "tessera-bufferize")
        else {
            return self;
        };
        if let Some(parallelize) = stage("tessera-parallelize").filter(|_| threads > 1) {
            let options = StageOptions([("threads".to_string(), threads.to_string())].into());
            self.elements
                .insert(at + 1, Element::Stage(parallelize, options));
            self.set_option("tessera-tile", "threads", &threads.to_string());
            self.set_option("tessera-fuse", "threads", &threads.to_string());
        }
        self
    }

    /// The pipeline with every kernel timed (`tessera-profile-kernels`, right after
    /// bufferization, before threads): see `kernel_profile` in the CPU runtime. Unchanged
    /// when it does not bufferize.
    pub fn with_kernel_profile(mut self) -> Pipeline {
        if let Some(at) = self
            .elements
            .iter()
            .position(|e| e.name() == "tessera-bufferize")
        {
            let profile = Element::Upstream("tessera-profile-kernels".to_string());
            self.elements.insert(at + 1, profile);
        }
        self
    }

    /// Whether a step of the pipeline is the stage `name`.
    pub fn has_stage(&self, name: &str) -> bool {
        self.elements
            .iter()
            .any(|e| matches!(e, Element::Stage(stage, _) if stage.name() == name))
    }

    /// The pipeline for a program that is MLIR already: without the stages that take the
    /// tessera graph (a preset's conversion).
    pub fn without_graph_stages(mut self) -> Pipeline {
        self.elements
            .retain(|e| !matches!(e, Element::Stage(stage, _) if stage.takes_graph()));
        self
    }

    /// Sets option `key` to `value` on every step that is the stage `name`.
    pub fn set_option(&mut self, name: &str, key: &str, value: &str) {
        for element in &mut self.elements {
            if let Element::Stage(stage, options) = element {
                if stage.name() == name {
                    options.0.insert(key.to_string(), value.to_string());
                }
            }
        }
    }

    /// The pipeline with the tuning cache at `path` (`tessera-tune`'s) for its CPU stages
    /// that look choices up (`tessera-fuse` and `tessera-tile`, when `tessera-tile` is in it:
    /// a GPU pipeline has none, and its fusion is not the CPU's to tune), for the CPU `cpu`
    /// and vector `unit` of a named target (the host's where `None`).
    pub fn set_tuning_cache(&mut self, path: &str, cpu: Option<&str>, unit: Option<&str>) {
        if !self.has_stage("tessera-tile") {
            return;
        }
        for stage in ["tessera-fuse", "tessera-tile"] {
            self.set_option(stage, "tuning", path);
            if let Some(cpu) = cpu {
                self.set_option(stage, "cpu", cpu);
            }
            if let Some(unit) = unit {
                self.set_option(stage, "unit", unit);
            }
        }
    }

    /// Parses MLIR's textual pipeline syntax. Unknown passes and stage options, and option
    /// values a stage does not take, are errors located in `text` that name the close matches.
    pub fn parse(text: &str) -> Result<Pipeline, PipelineError> {
        let error = |start: usize, end: usize, message: String| PipelineError {
            span: Span::new(start, end),
            message,
        };
        let lead = text.len() - text.trim_start().len();
        let trimmed = text.trim();
        let (inner, offset) = match trimmed.strip_prefix("builtin.module(") {
            Some(rest) => (
                rest.strip_suffix(')').ok_or_else(|| {
                    error(lead, lead + 15, "'builtin.module(' is not closed".into())
                })?,
                lead + 15,
            ),
            None => (trimmed, lead),
        };
        let elements = split_top_level(inner)
            .map_err(|(at, message)| error(offset + at, offset + at + 1, message))?
            .into_iter()
            .filter(|(_, e)| !e.trim().is_empty())
            .map(|(at, e)| {
                let start = offset + at + (e.len() - e.trim_start().len());
                let element = e.trim();
                parse_element(element)
                    .map_err(|message| error(start, start + element.len(), message))
            })
            .collect::<Result<_, _>>()?;
        Ok(Pipeline { elements })
    }

    /// Checks the options of every stage (as [`Pipeline::parse`] does): for pipelines built
    /// from a preset and flags.
    pub fn check(&self) -> Result<(), String> {
        for element in &self.elements {
            if let Element::Stage(stage, options) = element {
                check_values(*stage, options)?;
            }
        }
        Ok(())
    }
}

/// Why a pipeline text is not a pipeline: what, and where (a byte range of the text).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PipelineError {
    /// The culprit in the pipeline text.
    pub span: Span,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for PipelineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl PipelineError {
    /// The error as a diagnostic in `text` (the pipeline as given), shown as the file
    /// `<pass-pipeline>`, as MLIR shows errors in pipeline strings.
    pub fn diagnostic(&self, text: &str) -> Diagnostic {
        let file = Arc::new(SourceFile::new("<pass-pipeline>", text));
        Diagnostic::error_in(file, self.span, self.message.clone())
    }
}

/// Splits `text` at commas outside `()` and `{}`: each part with its offset in `text`; an
/// unbalanced bracket is an error at its offset.
fn split_top_level(text: &str) -> Result<Vec<(usize, &str)>, (usize, String)> {
    let mut parts = Vec::new();
    let mut open: Vec<usize> = Vec::new();
    let mut start = 0;
    for (at, c) in text.char_indices() {
        match c {
            '(' | '{' => open.push(at),
            // The guard closes the innermost bracket; with none open, it is unbalanced.
            ')' | '}' if open.pop().is_none() => {
                return Err((at, format!("unbalanced '{c}' in the pass pipeline")));
            }
            ',' if open.is_empty() => {
                parts.push((start, &text[start..at]));
                start = at + 1;
            }
            _ => {}
        }
    }
    if let Some(&at) = open.last() {
        return Err((at, "this bracket is not closed".into()));
    }
    parts.push((start, &text[start..]));
    Ok(parts)
}

fn parse_element(text: &str) -> Result<Element, String> {
    let name_end = text.find(['{', '(']).unwrap_or(text.len());
    let name = text[..name_end].trim();
    if let Some(stage) = stage(name) {
        let options = match text[name_end..].strip_prefix('{') {
            Some(rest) => parse_options(
                stage,
                rest.strip_suffix('}')
                    .ok_or_else(|| format!("the options of '{name}' are not closed"))?,
            )?,
            None if name_end == text.len() => StageOptions::default(),
            None => {
                return Err(format!(
                    "'{name}' takes options in {{...}}, not '{}'",
                    &text[name_end..]
                ))
            }
        };
        return Ok(Element::Stage(stage, options));
    }
    // Op-anchored nested pipelines (`func.func(cse)`) go to MLIR as written.
    let nested = text[name_end..].starts_with('(');
    if !nested && !upstream_names().any(|n| n == name) {
        let candidates: Vec<&str> = stages()
            .iter()
            .map(|s| s.name())
            .chain(upstream_names())
            .collect();
        return Err(format!(
            "unknown pass or stage '{name}'{}",
            did_you_mean(name, candidates)
        ));
    }
    Ok(Element::Upstream(text.to_string()))
}

/// `key=value` pairs separated by spaces, checked against `stage`'s options.
fn parse_options(stage: &dyn Stage, text: &str) -> Result<StageOptions, String> {
    let mut options = StageOptions::default();
    for pair in text.split_whitespace() {
        let (key, value) = pair
            .split_once('=')
            .ok_or_else(|| format!("option '{pair}' of '{}' is not key=value", stage.name()))?;
        if !stage.options().iter().any(|o| o.name == key) {
            let known: Vec<&str> = stage.options().iter().map(|o| o.name).collect();
            let hint = match did_you_mean(key, known.iter().copied()) {
                h if h.is_empty() && known.is_empty() => " (it takes none)".to_string(),
                h if h.is_empty() => format!(" (options: {})", known.join(", ")),
                h => h,
            };
            return Err(format!("'{}' has no option '{key}'{hint}", stage.name()));
        }
        options.0.insert(key.to_string(), value.to_string());
    }
    check_values(stage, &options)?;
    Ok(options)
}

/// Checks every value in `options` against what `stage` says the option takes.
fn check_values(stage: &dyn Stage, options: &StageOptions) -> Result<(), String> {
    for (key, value) in &options.0 {
        if let Some(option) = stage.options().iter().find(|o| o.name == key) {
            option
                .kind
                .check(key, value)
                .map_err(|e| format!("'{}': {e}", stage.name()))?;
        }
    }
    Ok(())
}

/// The names of the upstream passes.
pub fn upstream_names() -> impl Iterator<Item = &'static str> {
    UPSTREAM_PASSES
        .lines()
        .filter_map(|line| line.split('\t').next())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_print_and_parse_back() {
        for level in 0..=3 {
            for fusion in [true, false] {
                let text = Pipeline::preset(level, fusion).to_string();
                assert_eq!(
                    Pipeline::parse(&text).expect("a preset parses").to_string(),
                    text
                );
            }
        }
        assert_eq!(
            Pipeline::preset(3, false).to_string(),
            "builtin.module(tessera-convert-to-linalg,tessera-tile,tessera-vectorize,tessera-bufferize,tessera-lower-to-llvm)"
        );
    }

    #[test]
    fn mixes_stages_options_and_upstream_passes() {
        let p = Pipeline::parse("builtin.module(tessera-convert-to-linalg, tessera-tile{sizes=64,64,32}, func.func(cse), canonicalize)")
            .expect("parses");
        assert_eq!(p.elements.len(), 4);
        assert_eq!(p.to_string(), "builtin.module(tessera-convert-to-linalg,tessera-tile{sizes=64,64,32},func.func(cse),canonicalize)");
    }

    #[test]
    fn unknown_names_suggest_close_matches() {
        let e = Pipeline::parse("builtin.module(tessera-fsue)")
            .err()
            .expect("rejected");
        assert!(e.message.contains("did you mean 'tessera-fuse'"), "{e}");
        assert_eq!(e.span, Span::new(15, 26));
        let e = Pipeline::parse("builtin.module(canonicalise)")
            .err()
            .expect("rejected");
        assert!(e.message.contains("'canonicalize'"), "{e}");
        let e = Pipeline::parse("builtin.module(tessera-tile{size=4})")
            .err()
            .expect("rejected");
        assert!(e.message.contains("did you mean 'sizes'"), "{e}");
        assert!(Pipeline::parse("builtin.module(cse").is_err());
    }

    #[test]
    fn option_values_are_checked_where_they_are_written() {
        let text = "builtin.module(cse, tessera-tile{sizes=a,b})";
        let e = Pipeline::parse(text).err().expect("rejected");
        assert_eq!(&text[e.span.start..e.span.end], "tessera-tile{sizes=a,b}");
        assert!(e.message.contains("must be a list of integers"), "{e}");
        for bad in [
            "tessera-parallelize{threads=0}",
            "tessera-lower-to-llvm{cpu=bogus}",
            "tessera-lower-to-llvm{features=+avx9}",
            "tessera-lower-to-llvm{math=fast}",
            "tessera-apply-schedule{file=/no/such/schedule.mlir}",
        ] {
            assert!(Pipeline::parse(bad).is_err(), "{bad} is accepted");
        }
        let e = Pipeline::parse("tessera-lower-to-llvm{cpu=haswel}")
            .err()
            .expect("rejected");
        assert!(e.message.contains("did you mean 'haswell'"), "{e}");
        assert!(
            Pipeline::parse("tessera-lower-to-llvm{cpu=znver4 features=+avx2,-avx512f}").is_ok()
        );
    }
}
