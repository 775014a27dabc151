//! `tessera-import`: an ONNX model as tessera IR (see `tessera_tools::import`).

use clap::Parser;
use std::process::ExitCode;
use tessera_tools::import::{run, ImportArgs};

fn main() -> ExitCode {
    tessera::crash::install("tessera-import");
    run(
        &ImportArgs::parse(),
        &mut std::io::stdout(),
        &mut std::io::stderr(),
    )
}
