//! `tessera-onnx-conformance`: the ONNX node tests through tessera (see
//! `tessera_tools::conformance`).

use clap::Parser;
use std::process::ExitCode;
use tessera_tools::conformance::{run, ConformanceArgs};

fn main() -> ExitCode {
    tessera::crash::install("tessera-onnx-conformance");
    run(
        &ConformanceArgs::parse(),
        &mut std::io::stdout(),
        &mut std::io::stderr(),
    )
}
