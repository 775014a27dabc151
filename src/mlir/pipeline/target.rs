//! What a pipeline compiles for: the host CPU or an NVIDIA GPU through CUDA. A target names
//! the stages of its room that its presets run between the shared ones.

use std::fmt;

/// A target of the presets.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Target {
    /// The host's CPU, through LLVM: native code run in process.
    #[default]
    Cpu,
    /// An NVIDIA GPU: kernels as PTX, launched through the CUDA driver.
    Cuda,
}

impl Target {
    /// Every target, as `--target` names them.
    pub const ALL: [Target; 2] = [Target::Cpu, Target::Cuda];

    /// Its name in `--target`.
    pub fn name(self) -> &'static str {
        match self {
            Target::Cpu => "cpu",
            Target::Cuda => "cuda",
        }
    }

    /// The target named `name`.
    pub fn named(name: &str) -> Option<Target> {
        Target::ALL.into_iter().find(|t| t.name() == name)
    }

    /// The stages of preset `-O<level>` between fusion and bufferization (tiling and
    /// vectorization for the CPU's caches and registers; none for the GPU, which tiles for
    /// blocks and threads on buffers).
    pub fn before_bufferization(self, level: u8) -> Vec<&'static str> {
        match self {
            Target::Cpu => [("tessera-tile", 2), ("tessera-vectorize", 3)]
                .into_iter()
                .filter(|&(_, from)| level >= from)
                .map(|(name, _)| name)
                .collect(),
            Target::Cuda => Vec::new(),
        }
    }

    /// The stages every preset runs after bufferization: the lowering to the target's code.
    pub fn after_bufferization(self) -> &'static [&'static str] {
        match self {
            Target::Cpu => &["tessera-lower-to-llvm"],
            Target::Cuda => &["tessera-map-to-gpu", "tessera-lower-to-nvvm"],
        }
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
