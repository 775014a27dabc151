//! `tessera-run`: compile a model for the CPU and run it (see `tessera_tools::run`).

use clap::Parser;
use std::process::ExitCode;
use tessera_tools::run::{run, RunArgs};

fn main() -> ExitCode {
    tessera::crash::install("tessera-run");
    run(
        &RunArgs::parse(),
        &mut std::io::stdout(),
        &mut std::io::stderr(),
    )
}
