//! The parts of NVIDIA's CUDA toolkit tessera uses, found on this machine: libdevice (the
//! bitcode of CUDA's math functions, linked into kernels that call one) and `ptxas` (which
//! assembles PTX: the check that what tessera emits is what the driver will load). Neither
//! needs a GPU. `scripts/setup.sh` installs both from the PyPI wheel `nvidia-cuda-nvcc-cu12`
//! into the project's `.venv-cuda`; a toolkit elsewhere is found through the environment.

use std::path::{Path, PathBuf};

/// The environment variable that names a `cuda_nvcc` folder (the wheel's
/// `site-packages/nvidia/cuda_nvcc`) or a CUDA installation (`/usr/local/cuda`).
pub const CUDA_DIR_VARIABLE: &str = "TESSERA_CUDA_DIR";

/// libdevice within a toolkit folder.
const LIBDEVICE: &str = "nvvm/libdevice/libdevice.10.bc";

/// `ptxas` within a toolkit folder.
const PTXAS: &str = "bin/ptxas";

/// The folders searched for the toolkit, in order: `$TESSERA_CUDA_DIR`, the project's
/// `.venv-cuda` (where `scripts/setup.sh` puts it), `$CUDA_HOME`, `$CUDA_PATH`, `$CUDA_ROOT`,
/// `/usr/local/cuda`.
pub fn search_path() -> Vec<PathBuf> {
    let mut folders: Vec<PathBuf> = std::env::var_os(CUDA_DIR_VARIABLE)
        .map(PathBuf::from)
        .into_iter()
        .collect();
    let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join(".venv-cuda/lib");
    if let Ok(pythons) = std::fs::read_dir(&venv) {
        let mut found: Vec<PathBuf> = pythons
            .flatten()
            .map(|p| p.path().join("site-packages/nvidia/cuda_nvcc"))
            .collect();
        found.sort();
        folders.extend(found);
    }
    for variable in ["CUDA_HOME", "CUDA_PATH", "CUDA_ROOT"] {
        folders.extend(std::env::var_os(variable).map(PathBuf::from));
    }
    folders.push(PathBuf::from("/usr/local/cuda"));
    folders
}

/// `relative` in the first folder of [`search_path`] that has it.
fn find(relative: &str) -> Option<PathBuf> {
    search_path()
        .into_iter()
        .map(|folder| folder.join(relative))
        .find(|path| path.is_file())
}

/// libdevice's bitcode, if this machine has it.
pub fn libdevice() -> Option<PathBuf> {
    find(LIBDEVICE)
}

/// `ptxas`, if this machine has it.
pub fn ptxas() -> Option<PathBuf> {
    find(PTXAS)
}

/// Why a part of the toolkit is missing, and how to get it.
pub fn missing(what: &str) -> String {
    format!(
        "{what} was not found: run scripts/setup.sh (it installs NVIDIA's nvidia-cuda-nvcc-cu12 into .venv-cuda), or set {CUDA_DIR_VARIABLE} to a CUDA toolkit"
    )
}
