//! `tessera-tune`: the autotuner (see `tessera_tools::tune`).

use clap::Parser;
use std::process::ExitCode;
use tessera_tools::tune::{run_tune, TuneArgs};

fn main() -> ExitCode {
    tessera::crash::install("tessera-tune");
    run_tune(
        &TuneArgs::parse(),
        &mut std::io::stdout(),
        &mut std::io::stderr(),
    )
}
