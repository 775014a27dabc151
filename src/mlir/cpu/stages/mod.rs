//! The CPU target's stages: tiling for the caches, vectorization for the vector registers,
//! threads for the cores, and the lowering to the LLVM dialect.

mod lower_to_llvm;
pub mod parallelize;
pub mod tile;
mod vectorize;

pub use lower_to_llvm::LowerToLlvm;
pub use parallelize::Parallelize;
pub use tile::Tile;
pub use vectorize::Vectorize;
