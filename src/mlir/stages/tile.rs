//! `tessera-tile`: tiles every linalg op twice with the transform dialect's `tile_using_for`:
//! by its `tessera.tile_sizes` (cache tiles), then the tile by its `tessera.vector_sizes`
//! (register tiles, which `tessera-vectorize` turns into vectors). The strategy attaches both
//! to ops that have none; `sizes=` gives the cache sizes of every op and skips the register
//! level. Precondition: linalg on tensors.

use crate::diag::Diagnostic;
use crate::mlir::schedule::apply_schedule;
use crate::mlir::stages::{
    expect_mlir, stage_error, Program, Stage, StageEnv, StageOption, StageOptions,
};
use crate::mlir::strategy::{choose, choose_vector, loops, VectorUnit, TILE_SIZES, VECTOR_SIZES};
use crate::mlir::walk::walk;
use melior::ir::attribute::{DenseI64ArrayAttribute, IntegerAttribute};
use melior::ir::r#type::IntegerType;
use std::fmt::Write;

/// Tiling as a stage.
pub struct Tile;

/// Marks each op to tile for the schedule, which matches it by this attribute.
const MARKER: &str = "tessera.tile_id";

/// Marks register tiles for `tessera-vectorize`.
pub const VECTORIZE: &str = "tessera.vectorize";

impl Stage for Tile {
    fn name(&self) -> &'static str {
        "tessera-tile"
    }

    fn summary(&self) -> &'static str {
        "Tile linalg ops by their tessera.tile_sizes (chosen by the strategy when absent). Input: linalg on tensors."
    }

    fn options(&self) -> &'static [StageOption] {
        &[
            StageOption { name: "sizes", doc: "tile sizes for every op, one per loop, outermost first (0 = untiled); overrides the strategy" },
            StageOption { name: "unit", doc: "the vector unit register tiles are sized for: avx2 or avx512; default: the host's" },
        ]
    }

    fn run<'c>(
        &self,
        program: Program<'c>,
        env: &StageEnv<'c, '_>,
        options: &StageOptions,
    ) -> Result<Program<'c>, Vec<Diagnostic>> {
        let mut module = expect_mlir(program, self.name())?;
        let forced = options
            .int_list("sizes")
            .transpose()
            .map_err(|e| stage_error(self.name(), e))?;
        if let Some(bad) = forced.iter().flatten().find(|&&s| s < 0) {
            return Err(stage_error(
                self.name(),
                format!("option 'sizes' must be non-negative, but has {bad}"),
            ));
        }
        let ctx = env.context.context();
        let i64_type = IntegerType::new(ctx, 64).into();
        let mut schedule = String::from(
            "module attributes {transform.with_named_sequence} {\n  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {\n",
        );
        let unit = match options.0.get("unit").map(String::as_str) {
            None => VectorUnit::host(),
            Some("avx2") => VectorUnit::AVX2,
            Some("avx512") => VectorUnit::AVX512,
            Some(other) => {
                return Err(stage_error(
                    self.name(),
                    format!("option 'unit' must be 'avx2' or 'avx512', but is '{other}'"),
                ))
            }
        };
        let mut count = 0;
        walk(&module, |op| {
            let Some(op_loops) = loops(op) else { return };
            let name = op.name();
            let pinned = |attribute: &str| {
                op.attribute(attribute)
                    .and_then(|a| DenseI64ArrayAttribute::try_from(a).ok())
                    .map(|array| {
                        (0..array.len())
                            .filter_map(|i| array.element(i).ok())
                            .collect::<Vec<i64>>()
                    })
            };
            let (cache, register) = match &forced {
                Some(forced) => (
                    (0..op_loops.0.len())
                        .map(|i| forced.get(i).copied().unwrap_or(0))
                        .collect(),
                    None,
                ),
                None => {
                    let cache = pinned(TILE_SIZES).unwrap_or_else(|| choose(&name, &op_loops));
                    let register = pinned(VECTOR_SIZES)
                        .unwrap_or_else(|| choose_vector(&name, &op_loops, &cache, unit));
                    (cache, Some(register))
                }
            };
            op.remove_attribute(TILE_SIZES);
            op.remove_attribute(VECTOR_SIZES);
            let register_level = register
                .as_ref()
                .is_some_and(|r| r.len() == op_loops.0.len());
            let levels: Vec<Vec<i64>> = [Some(cache), register]
                .into_iter()
                .flatten()
                .filter(|sizes| sizes.len() == op_loops.0.len() && sizes.iter().any(|&s| s != 0))
                .collect();
            if levels.is_empty() {
                return;
            }
            op.set_attribute(MARKER, IntegerAttribute::new(i64_type, count).into());
            if register_level && !op.touches_i1() {
                // Register tiles are what tessera-vectorize turns into vectors; untiled ops
                // (whole tensors) must not become vectors of the whole tensor.
                op.set_attribute(VECTORIZE, melior::ir::Attribute::unit(ctx));
            }
            let _ = writeln!(
                schedule,
                "    %op{count} = transform.structured.match ops{{[\"{name}\"]}} attributes {{{MARKER} = {count} : i64}} in %root : (!transform.any_op) -> !transform.any_op"
            );
            let mut handle = format!("%op{count}");
            for (level, sizes) in levels.iter().enumerate() {
                let loops = sizes.iter().filter(|&&s| s != 0).count();
                let handles = vec!["!transform.any_op"; loops + 1].join(", ");
                let text = sizes
                    .iter()
                    .map(i64::to_string)
                    .collect::<Vec<_>>()
                    .join(", ");
                let _ = writeln!(
                    schedule,
                    "    %t{count}_{level}:{} = transform.structured.tile_using_for {handle} tile_sizes [{text}] : (!transform.any_op) -> ({handles})",
                    loops + 1
                );
                handle = format!("%t{count}_{level}#0");
            }
            count += 1;
        });
        schedule.push_str("    transform.yield\n  }\n}\n");
        if count > 0 {
            apply_schedule(env, &mut module, &schedule, "of tessera-tile", self.name())?;
        }
        walk(&module, |op| op.remove_attribute(MARKER));
        Ok(Program::Mlir(module))
    }
}
