//! `tessera-bench`: the benchmark driver (see `tessera_tools::bench`).

use clap::Parser;
use std::process::ExitCode;
use tessera_tools::bench::{run_bench, BenchArgs};

fn main() -> ExitCode {
    tessera::crash::install("tessera-bench");
    run_bench(
        &BenchArgs::parse(),
        &mut std::io::stdout(),
        &mut std::io::stderr(),
    )
}
