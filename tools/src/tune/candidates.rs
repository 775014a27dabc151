//! The choices `tessera-tune` tries for a kernel, one axis at a time from the current best:
//! each loop's cache tile, each loop's register tile, the cache tiles' loop order, packing;
//! for a fusion, fused or not and the epilogue's tiles. Every candidate fits its loops (sizes
//! divide, register tiles divide cache tiles, a bounded register tile), so each compiles to
//! static shapes.

use tessera::mlir::cpu::tuning::{FusionChoice, TileChoice};
use tessera::mlir::pipeline::loop_nest::Loops;

/// The cache tile sizes tried for a loop (those dividing its extent; 0, the whole loop, too):
/// powers of two, and multiples of the 6 and 14 rows of AVX2's and AVX-512's widest matmul
/// register tiles.
const CACHE_SIZES: [i64; 20] = [
    1, 2, 4, 6, 8, 12, 14, 16, 24, 28, 32, 48, 56, 64, 96, 112, 128, 256, 512, 1024,
];

/// The register tile sizes tried for a loop (those dividing its cache tile): rows of the
/// accumulator tiles AVX2 and AVX-512 hold, and one to four registers of lanes.
const REGISTER_SIZES: [i64; 14] = [1, 2, 3, 4, 6, 7, 8, 12, 14, 16, 24, 32, 48, 64];

/// One axis of a kernel's choices, with the values to try along it.
pub struct Axis<C> {
    /// What varies (`cache[1]`, `order`), as the progress line and the summary say it.
    pub name: String,
    /// Each candidate: the current choice with this axis changed.
    pub candidates: Vec<C>,
}

/// The cache tile sizes tried for a loop of `extent`: the whole loop (0), then each of
/// [`CACHE_SIZES`] that divides it.
fn cache_sizes(extent: i64) -> impl Iterator<Item = i64> {
    std::iter::once(0).chain(
        CACHE_SIZES
            .iter()
            .copied()
            .filter(move |&s| s < extent && extent % s == 0),
    )
}

/// The largest of `sizes` that divides `span` and is at most `most` (1 when none).
fn largest_divisor(span: i64, most: i64) -> i64 {
    REGISTER_SIZES
        .iter()
        .copied()
        .filter(|&s| s <= most && span % s == 0)
        .max()
        .unwrap_or(1)
}

/// The axes of a tile choice `current` for an op with `loops` and its key `kernel`.
pub fn tile_axes(current: &TileChoice, loops: &Loops, kernel: &str) -> Vec<Axis<TileChoice>> {
    let n = loops.0.len();
    let span = |choice: &TileChoice, d: usize| match choice.cache[d] {
        0 => loops.0[d].0,
        c => c,
    };
    let fits = |choice: &TileChoice| choice.fits(loops).is_ok() && choice != current;
    let mut axes = Vec::new();
    for d in 0..n {
        let (extent, _) = loops.0[d];
        let candidates: Vec<TileChoice> = cache_sizes(extent)
            .map(|size| {
                let mut choice = current.clone();
                choice.cache[d] = size;
                let span = span(&choice, d);
                if choice.register[d] != 0 && span % choice.register[d] != 0 {
                    choice.register[d] = largest_divisor(span, choice.register[d]);
                }
                choice
            })
            .filter(|c| fits(c))
            .collect();
        axes.push(Axis {
            name: format!("cache[{d}]"),
            candidates,
        });
    }
    for d in 0..n {
        let span = span(current, d);
        let candidates: Vec<TileChoice> = REGISTER_SIZES
            .iter()
            .copied()
            .filter(|&s| s <= span && span % s == 0)
            .map(|size| {
                let mut choice = current.clone();
                choice.register[d] = size;
                choice
            })
            .filter(|c| fits(c))
            .collect();
        axes.push(Axis {
            name: format!("register[{d}]"),
            candidates,
        });
    }
    // Reductions outermost, or in their place.
    let reductions: Vec<usize> = (0..n).filter(|&d| loops.0[d].1).collect();
    if !reductions.is_empty() && reductions.len() < n {
        let identity: Vec<usize> = (0..n).collect();
        let outer: Vec<usize> = reductions
            .iter()
            .copied()
            .chain((0..n).rev().filter(|d| !loops.0[*d].1))
            .collect();
        let candidates = [identity, outer]
            .into_iter()
            .map(|order| TileChoice {
                order,
                ..current.clone()
            })
            .filter(|c| fits(c))
            .collect();
        axes.push(Axis {
            name: "order".into(),
            candidates,
        });
    }
    let packs = ["linalg.matmul ", "linalg.conv_2d_nhwc_hwcf "]
        .iter()
        .any(|name| kernel.starts_with(name));
    if packs {
        axes.push(Axis {
            name: "panels".into(),
            candidates: vec![TileChoice {
                panels: !current.panels,
                ..current.clone()
            }],
        });
    }
    axes.retain(|axis| !axis.candidates.is_empty());
    axes
}

/// The axes of a fusion choice `current` for an epilogue with `loops`: fused or not, then
/// (fused) each loop's tile.
pub fn fusion_axes(current: &FusionChoice, loops: &Loops) -> Vec<Axis<FusionChoice>> {
    let flipped = FusionChoice {
        fuse: !current.fuse,
        tiles: current.tiles.clone(),
    };
    let mut axes = vec![Axis {
        name: "fuse".into(),
        candidates: [flipped]
            .into_iter()
            .filter(|c| c.fits(loops).is_ok())
            .collect(),
    }];
    if current.fuse && current.tiles.len() == loops.0.len() {
        for (d, &(extent, _)) in loops.0.iter().enumerate() {
            let candidates = cache_sizes(extent)
                .map(|size| {
                    let mut tiles = current.tiles.clone();
                    tiles[d] = size;
                    FusionChoice { fuse: true, tiles }
                })
                .filter(|c| c != current && c.fits(loops).is_ok())
                .collect();
            axes.push(Axis {
                name: format!("tiles[{d}]"),
                candidates,
            });
        }
    }
    axes.retain(|axis| !axis.candidates.is_empty());
    axes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tile_candidate_fits_and_differs() {
        let loops = Loops(vec![(96, false), (64, false), (128, true)]);
        let current = TileChoice {
            cache: vec![0, 64, 0],
            register: vec![8, 32, 1],
            order: vec![0, 1, 2],
            panels: true,
        };
        let axes = tile_axes(&current, &loops, "linalg.matmul [96, 64, 128r] f32 f32 f32");
        let names: Vec<&str> = axes.iter().map(|a| a.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "cache[0]",
                "cache[1]",
                "cache[2]",
                "register[0]",
                "register[1]",
                "register[2]",
                "order",
                "panels"
            ]
        );
        for axis in &axes {
            for candidate in &axis.candidates {
                assert_eq!(
                    candidate.fits(&loops),
                    Ok(()),
                    "{}: {candidate:?}",
                    axis.name
                );
                assert_ne!(candidate, &current);
            }
        }
        // A cache tile of 16 rows takes the register rows down to a divisor of it.
        let rows = &axes[0].candidates;
        assert!(rows.iter().any(|c| c.cache[0] == 16 && c.register[0] == 8));
        assert!(rows.iter().any(|c| c.cache[0] == 4 && c.register[0] == 4));
        let order = &axes[6].candidates;
        assert_eq!(order.len(), 1);
        assert_eq!(order[0].order, [2, 1, 0]);
    }

    #[test]
    fn a_fusion_is_tried_apart_and_retiled() {
        let loops = Loops(vec![(64, false), (96, false)]);
        let fused = FusionChoice {
            fuse: true,
            tiles: vec![0, 32],
        };
        let axes = fusion_axes(&fused, &loops);
        assert!(!axes[0].candidates[0].fuse);
        assert!(axes[2].candidates.iter().all(|c| c.fits(&loops).is_ok()));
        assert!(axes[2].candidates.iter().any(|c| c.tiles == [0, 16]));
        // Untiled everywhere is no fused kernel.
        assert!(!axes[2].candidates.iter().any(|c| c.tiles == [0, 0]));
        let apart = FusionChoice {
            fuse: false,
            tiles: vec![0, 32],
        };
        assert_eq!(fusion_axes(&apart, &loops).len(), 1);
    }
}
