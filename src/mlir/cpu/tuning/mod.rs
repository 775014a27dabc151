//! Tuning: the choices `tessera-tune` measured best for a kernel on a target, kept in a
//! tuning cache, and how the stages that make those choices find them. `cache.rs` is the file
//! (format, loading with every problem reported, saving), `kernel_key.rs` the key a kernel is
//! found by (its structure and shapes), `choice.rs` what an entry holds and when it fits.

pub mod cache;
pub mod choice;
pub mod kernel_key;

pub use cache::{CacheProblem, Entry, LoadedCache, TuningCache};
pub use choice::{FusionChoice, TileChoice};
pub use kernel_key::{fusion_key, kernel_key, TuningTarget};

use crate::mlir::bridge::walk::WalkedOp;
use crate::mlir::cpu::cpu_model::CpuModel;
use crate::mlir::pipeline::stages::StageOptions;

/// The attribute `tessera-tile` and `tessera-fuse` put on each op whose choices a tuning cache
/// could hold, when they run with one (`tuning=FILE`): the kernel's key, where its choices
/// came from (`"tuning cache"` or `"strategy"`) and what they are. `tessera-tune` reads it to
/// find what to tune; `--print-ir-after` shows it.
pub const TUNING_ATTRIBUTE: &str = "tessera.tuning";

/// The attribute `tessera-fuse` puts on a contraction and its elementwise epilogue when it
/// runs with a tuning cache: the fusion's key, where the choice came from, whether they are
/// fused and the epilogue's tiles. The fusion report says when the cache kept them apart.
pub const FUSION_TUNING_ATTRIBUTE: &str = "tessera.fusion_tuning";

/// The attribute that keeps a matmul's or convolution's operands laid out as they are
/// (`tessera-pack-panels` leaves it alone): a tuning cache's `panels: false`.
pub const KEEP_LAYOUT: &str = "tessera.keep_layout";

/// Where a kernel's choices came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// An entry of the tuning cache.
    Cache,
    /// The strategy (no entry, or one that did not fit the kernel).
    Strategy,
}

impl Source {
    /// How `--print-ir-after` and the fusion report say it.
    pub fn name(self) -> &'static str {
        match self {
            Source::Cache => "tuning cache",
            Source::Strategy => "strategy",
        }
    }
}

/// A stage's view of its tuning cache: the cache and the target its entries are looked up
/// for.
pub struct StageTuning {
    /// The cache's usable entries.
    pub cache: TuningCache,
    /// The target's text (`TuningTarget`).
    pub target: String,
}

impl StageTuning {
    /// The tuning of a stage whose options are `options` (`tuning=FILE`, `cpu=NAME`, the host's
    /// CPU where not given), for `unit`, `l2_bytes` and `threads`; `None` without `tuning`. A
    /// file that is no tuning cache at all is an error (the tools report it and leave the
    /// option out); entries that do not fit are left out (the tools report them).
    pub fn from_options(
        options: &StageOptions,
        unit: &'static str,
        l2_bytes: i64,
        threads: i64,
    ) -> Result<Option<StageTuning>, String> {
        let Some(path) = options.0.get("tuning") else {
            return Ok(None);
        };
        let loaded = TuningCache::load(std::path::Path::new(path));
        if let Some(problem) = loaded.problems.iter().find(|p| p.whole_file) {
            return Err(problem.to_string());
        }
        let cpu = options
            .0
            .get("cpu")
            .cloned()
            .unwrap_or_else(|| CpuModel::host().cpu.clone());
        let target = TuningTarget {
            cpu,
            unit,
            l2_bytes,
            threads,
        };
        Ok(Some(StageTuning {
            cache: loaded.cache,
            target: target.to_string(),
        }))
    }
}

/// Marks `op` with [`TUNING_ATTRIBUTE`]: its kernel `key`, where its choices came from and
/// `choices` (attribute entries as MLIR writes them, `cache = array<i64: 0, 32>`).
pub fn annotate(
    op: &WalkedOp<'_>,
    ctx: &melior::Context,
    key: &str,
    source: Source,
    choices: &str,
) {
    if let Some(attribute) = tuning_attribute(ctx, key, source, choices) {
        op.set_attribute(TUNING_ATTRIBUTE, attribute);
    }
}

/// The dictionary attribute of a tuning mark: `{kernel = "...", source = "...", choices}`.
pub fn tuning_attribute<'c>(
    ctx: &'c melior::Context,
    key: &str,
    source: Source,
    choices: &str,
) -> Option<melior::ir::Attribute<'c>> {
    let text = format!(
        "{{kernel = \"{}\", source = \"{}\", {choices}}}",
        key.replace('\\', "\\\\").replace('"', "\\\""),
        source.name()
    );
    melior::ir::Attribute::parse(ctx, &text)
}

/// `values` as an MLIR dense array's text (`array<i64: 0, 32>`).
pub fn i64_array<T: ToString>(values: &[T]) -> String {
    let values: Vec<String> = values.iter().map(ToString::to_string).collect();
    if values.is_empty() {
        "array<i64>".into()
    } else {
        format!("array<i64: {}>", values.join(", "))
    }
}

/// A tuning mark read back from a module: what a stage chose for one kernel and where the
/// choice came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mark {
    /// The kernel's key.
    pub kernel: String,
    /// Where its choices came from.
    pub source: Source,
    /// `tessera-tile`'s choices, for a [`TUNING_ATTRIBUTE`].
    pub tiles: Option<TileChoice>,
    /// `tessera-fuse`'s choices, for a [`FUSION_TUNING_ATTRIBUTE`].
    pub fusion: Option<FusionChoice>,
}

/// The value of field `name` in a printed dictionary attribute `text`: a string's contents,
/// an array's elements or a word.
fn field<'t>(text: &'t str, name: &str) -> Option<&'t str> {
    let at = [format!("{{{name} = "), format!(", {name} = ")]
        .iter()
        .find_map(|pattern| text.find(pattern.as_str()).map(|at| at + pattern.len()))?;
    let rest = &text[at..];
    if let Some(string) = rest.strip_prefix('"') {
        return string.find('"').map(|end| &string[..end]);
    }
    if let Some(array) = rest.strip_prefix("array<i64") {
        let end = array.find('>')?;
        return Some(array[..end].trim_start_matches(':').trim());
    }
    rest.find([',', '}']).map(|end| &rest[..end])
}

/// The integers of an array field's value (`0, 32, 128`).
fn integers<T: std::str::FromStr>(text: &str) -> Option<Vec<T>> {
    text.split(',')
        .map(str::trim)
        .filter(|item| !item.is_empty())
        .map(|item| item.parse().ok())
        .collect()
}

impl Mark {
    /// The mark printed as `text` (a [`TUNING_ATTRIBUTE`] or [`FUSION_TUNING_ATTRIBUTE`]).
    pub fn parse(text: &str) -> Option<Mark> {
        let kernel = field(text, "kernel")?.to_string();
        let source = match field(text, "source")? {
            "tuning cache" => Source::Cache,
            _ => Source::Strategy,
        };
        let (tiles, fusion) = match field(text, "fuse") {
            Some(fuse) => {
                let fusion = FusionChoice {
                    fuse: fuse == "true",
                    tiles: integers(field(text, "tiles")?)?,
                };
                (None, Some(fusion))
            }
            None => {
                let tiles = TileChoice {
                    cache: integers(field(text, "cache")?)?,
                    register: integers(field(text, "register")?)?,
                    order: integers(field(text, "order")?)?,
                    panels: field(text, "panels")? == "true",
                };
                (Some(tiles), None)
            }
        };
        Some(Mark {
            kernel,
            source,
            tiles,
            fusion,
        })
    }

    /// Every mark in `module`, in walk order.
    pub fn all_in(module: &melior::ir::Module<'_>) -> Vec<Mark> {
        let mut marks = Vec::new();
        crate::mlir::bridge::walk::walk(module, |op| {
            for name in [TUNING_ATTRIBUTE, FUSION_TUNING_ATTRIBUTE] {
                if let Some(mark) = op.attribute(name).and_then(|a| Mark::parse(&a.to_string())) {
                    marks.push(mark);
                }
            }
        });
        marks
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_read_back_as_printed() {
        let tile = r#"{cache = array<i64: 0, 32, 128>, kernel = "linalg.generic [64, 96] f32 f32 maps (d0, d1) -> (d0, d1); (d0, d1) -> (d0, d1) body arith.addf, math.exp", order = array<i64: 0, 1, 2>, panels = false, register = array<i64: 8, 32, 1>, source = "tuning cache"}"#;
        let mark = Mark::parse(tile).unwrap();
        assert_eq!(mark.source, Source::Cache);
        assert!(mark.kernel.ends_with("body arith.addf, math.exp"));
        assert_eq!(
            mark.tiles,
            Some(TileChoice {
                cache: vec![0, 32, 128],
                register: vec![8, 32, 1],
                order: vec![0, 1, 2],
                panels: false
            })
        );
        let fusion = r#"{fuse = false, kernel = "fuse a [4] f32 into b [4] f32", source = "strategy", tiles = array<i64>}"#;
        let mark = Mark::parse(fusion).unwrap();
        assert_eq!(mark.source, Source::Strategy);
        assert_eq!(
            mark.fusion,
            Some(FusionChoice {
                fuse: false,
                tiles: vec![]
            })
        );
        assert_eq!(Mark::parse("{source = \"strategy\"}"), None);
    }
}
