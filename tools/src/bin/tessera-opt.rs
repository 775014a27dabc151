//! `tessera-opt`: the opt-style driver (see `tessera_tools::opt`).

use clap::Parser;
use std::process::ExitCode;
use tessera_tools::opt::{run_opt, OptArgs};

fn main() -> ExitCode {
    tessera::crash::install("tessera-opt");
    run_opt(&OptArgs::parse(), &mut std::io::stderr())
}
