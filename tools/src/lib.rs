//! The tessera tools' shared code: the registry of every dialect and the drivers behind the
//! thin binaries in `bin/`.

pub mod bench;
pub mod conformance;
pub mod import;
pub mod model;
pub mod opt;
pub mod profile;
pub mod progress;
pub mod run;
pub mod tune;
pub mod tuning_cache;

use tessera::dialect::Registry;

/// A registry holding every dialect of tessera.
pub fn registry() -> Registry {
    Registry::new()
        .with(&tessera_array::ARRAY)
        .with(&tessera_nn::NN)
}
