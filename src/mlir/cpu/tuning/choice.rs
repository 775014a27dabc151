//! What a tuning cache entry chooses for a kernel, and whether it fits the kernel's loops: a
//! tile choice (cache tiles, register tiles, the cache tiles' loop order, packing) for
//! `tessera-tile`, a fusion choice (fuse or not, the fused tiles) for `tessera-fuse`.

use crate::mlir::pipeline::loop_nest::Loops;
use serde::{Deserialize, Serialize};

/// The most elements one register tile may hold (a matmul's 14 x 32 holds 448, a
/// convolution's 8 pixels x 32 channels x 7 taps 1792): beyond it the vectorizer unrolls into
/// code that takes LLVM minutes, so a hand-edited entry asking for more does not fit.
pub const MAX_REGISTER_ELEMENTS: i64 = 4096;

/// `tessera-tile`'s choices for one op.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TileChoice {
    /// Cache tile sizes, one per loop (0 = the whole loop).
    pub cache: Vec<i64>,
    /// Register tile sizes within a cache tile, one per loop (0 = the whole cache tile).
    pub register: Vec<i64>,
    /// The cache tile loops' order, outermost first (loop indices).
    pub order: Vec<usize>,
    /// Whether the weights its register tiles read may be packed into panels.
    pub panels: bool,
}

/// `tessera-fuse`'s choices for one epilogue and the contraction it reads.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FusionChoice {
    /// Whether the contraction is computed inside the epilogue's tiles.
    pub fuse: bool,
    /// The epilogue's tile sizes, one per loop (0 = the whole loop); unused when not fused.
    pub tiles: Vec<i64>,
}

/// Why `sizes` cannot tile `loops`, if they cannot: one size per loop, each 0 or a divisor of
/// its loop's extent (tiles stay static).
fn tiles_fit(what: &str, sizes: &[i64], loops: &Loops) -> Result<(), String> {
    if sizes.len() != loops.0.len() {
        return Err(format!(
            "{what} has {} sizes for {} loops",
            sizes.len(),
            loops.0.len()
        ));
    }
    for (d, (&size, &(extent, _))) in sizes.iter().zip(&loops.0).enumerate() {
        if size < 0 || (size != 0 && extent % size != 0) {
            return Err(format!(
                "{what} size {size} does not divide loop {d} of {extent}"
            ));
        }
    }
    Ok(())
}

impl TileChoice {
    /// Why the choice cannot tile an op with `loops`, if it cannot.
    pub fn fits(&self, loops: &Loops) -> Result<(), String> {
        tiles_fit("cache", &self.cache, loops)?;
        let spans: Vec<i64> = self
            .cache
            .iter()
            .zip(&loops.0)
            .map(|(&c, &(extent, _))| if c == 0 { extent } else { c })
            .collect();
        tiles_fit(
            "register",
            &self.register,
            &Loops(spans.iter().map(|&s| (s, false)).collect()),
        )?;
        let elements = self
            .register
            .iter()
            .zip(&spans)
            .map(|(&r, &span)| if r == 0 { span } else { r })
            .fold(1i64, i64::saturating_mul);
        if elements > MAX_REGISTER_ELEMENTS {
            return Err(format!(
                "a register tile of {elements} elements is over the {MAX_REGISTER_ELEMENTS} allowed"
            ));
        }
        let mut order = self.order.clone();
        order.sort_unstable();
        if order != (0..loops.0.len()).collect::<Vec<_>>() {
            return Err(format!(
                "order {:?} is no permutation of the {} loops",
                self.order,
                loops.0.len()
            ));
        }
        Ok(())
    }
}

impl FusionChoice {
    /// Why the choice cannot tile an epilogue with `loops`, if it cannot.
    pub fn fits(&self, loops: &Loops) -> Result<(), String> {
        if self.fuse {
            tiles_fit("tiles", &self.tiles, loops)?;
            if self.tiles.iter().all(|&t| t == 0) {
                return Err("a fused epilogue needs at least one tiled loop".into());
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matmul() -> Loops {
        Loops(vec![(64, false), (96, false), (128, true)])
    }

    #[test]
    fn a_tile_choice_fits_only_sizes_that_divide() {
        let good = TileChoice {
            cache: vec![0, 32, 64],
            register: vec![8, 32, 1],
            order: vec![2, 1, 0],
            panels: true,
        };
        assert_eq!(good.fits(&matmul()), Ok(()));
        let uneven = TileChoice {
            cache: vec![0, 40, 64],
            ..good.clone()
        };
        assert!(uneven
            .fits(&matmul())
            .unwrap_err()
            .contains("40 does not divide"));
        let register = TileChoice {
            register: vec![8, 64, 1],
            ..good.clone()
        };
        assert!(register
            .fits(&matmul())
            .unwrap_err()
            .contains("register size 64"));
        let order = TileChoice {
            order: vec![0, 0, 1],
            ..good.clone()
        };
        assert!(order.fits(&matmul()).unwrap_err().contains("permutation"));
        let short = TileChoice {
            cache: vec![0, 32],
            ..good.clone()
        };
        assert!(short
            .fits(&matmul())
            .unwrap_err()
            .contains("2 sizes for 3 loops"));
        let huge = TileChoice {
            register: vec![0, 0, 0],
            ..good
        };
        assert!(huge
            .fits(&matmul())
            .unwrap_err()
            .contains("131072 elements"));
    }

    #[test]
    fn an_unfused_choice_needs_no_tiles() {
        let loops = Loops(vec![(64, false), (96, false)]);
        let unfused = FusionChoice {
            fuse: false,
            tiles: vec![],
        };
        assert_eq!(unfused.fits(&loops), Ok(()));
        let untiled = FusionChoice {
            fuse: true,
            tiles: vec![0, 0],
        };
        assert!(untiled.fits(&loops).is_err());
    }
}
