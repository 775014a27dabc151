//! The CPU target model: what code generation needs to know of a CPU — its vector registers,
//! its FMA pipes and their latency, its caches and cores — read from the host (LLVM's name of
//! its CPU, its features, `/sys/devices/system/cpu`) or derived from a named CPU and features
//! (`--target-cpu`, `--target-features`), so that what is compiled for a named target is the
//! same on every machine. `tessera-opt --print-target` shows it.

use std::ffi::{c_char, CStr};
use std::fmt;
use std::sync::OnceLock;

use crate::mlir::cpu::strategy::VectorUnit;

/// Where a model's numbers come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ModelSource {
    /// Read from this machine.
    Host,
    /// Derived from a CPU name and features given on the command line (caches: the named
    /// target's, [`NamedCaches`]).
    Named,
}

/// A CPU as code generation sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuModel {
    /// LLVM's name of the CPU (`sapphirerapids`, `znver4`, ...).
    pub cpu: String,
    /// Where the numbers come from.
    pub source: ModelSource,
    /// f32 lanes per vector register (8 with AVX2, 16 with AVX-512).
    pub lanes: i64,
    /// Vector registers (16 with AVX2, 32 with AVX-512).
    pub registers: i64,
    /// FMA instructions of the full vector width the core starts per cycle.
    pub fma_pipes: i64,
    /// Cycles from an FMA's inputs to its result.
    pub fma_latency: i64,
    /// Bytes of L1 data cache per core.
    pub l1d_bytes: i64,
    /// Bytes of L2 cache per core.
    pub l2_bytes: i64,
    /// Bytes of L3 cache (shared; 0 where there is none).
    pub l3_bytes: i64,
    /// Cores code may run on.
    pub cores: i64,
}

/// The caches a named target is sized for, so that what it compiles to does not depend on
/// the host: those of Skylake-SP and later Xeons and of Zen 4 per core (32 KiB L1d,
/// 1 MiB L2), 32 MiB of L3.
pub struct NamedCaches;

impl NamedCaches {
    /// L1 data cache bytes.
    pub const L1D: i64 = 32 << 10;
    /// L2 bytes.
    pub const L2: i64 = 1 << 20;
    /// L3 bytes.
    pub const L3: i64 = 32 << 20;
}

extern "C" {
    fn LLVMGetHostCPUName() -> *mut c_char;
    fn LLVMGetHostCPUFeatures() -> *mut c_char;
    fn LLVMDisposeMessage(message: *mut c_char);
}

/// A string the LLVM-C API returns (`get`), copied (`fallback` where it returns none).
fn llvm_string(get: unsafe extern "C" fn() -> *mut c_char, fallback: &str) -> String {
    // SAFETY: `get` is one of LLVM-C's host queries, which return a string LLVM allocated (or
    // null); it is copied and then released with LLVMDisposeMessage, as the API requires.
    unsafe {
        let raw = get();
        if raw.is_null() {
            return fallback.to_string();
        }
        let text = CStr::from_ptr(raw).to_string_lossy().into_owned();
        LLVMDisposeMessage(raw);
        text
    }
}

/// LLVM's name of the host's CPU (what `-mcpu=native` picks, from CPUID's family and
/// model), corrected where the host's features contradict it: a hypervisor may report
/// another model (a Sapphire Rapids VM here reported Rocket Lake's, a client part without
/// AMX, whose one 512-bit FMA pipe would halve the peak the model says). A CPU with AMX is
/// taken for the server part it is.
fn host_cpu_name() -> String {
    let name = llvm_string(LLVMGetHostCPUName, "generic");
    let features = llvm_string(LLVMGetHostCPUFeatures, "");
    let amx = features.split(',').any(|f| f == "+amx-tile");
    if amx && !AMX_CPUS.contains(&name.as_str()) {
        return "sapphirerapids".to_string();
    }
    name
}

/// LLVM's x86-64 CPUs that have AMX.
const AMX_CPUS: [&str; 5] = [
    "sapphirerapids",
    "emeraldrapids",
    "graniterapids",
    "graniterapids-d",
    "graniterapids_d",
];

/// The size in `/sys` notation (`48K`, `2048K`, `480M`) in bytes.
fn parse_cache_size(text: &str) -> Option<i64> {
    let text = text.trim();
    let (digits, unit) = text.split_at(text.find(|c: char| !c.is_ascii_digit())?);
    let scale = match unit {
        "K" => 1 << 10,
        "M" => 1 << 20,
        "G" => 1 << 30,
        _ => return None,
    };
    digits.parse::<i64>().ok().map(|n| n * scale)
}

/// The host's first core's caches from `/sys`: (L1 data, L2, L3) bytes, each `None` where
/// it does not say.
fn host_caches() -> [Option<i64>; 3] {
    let mut caches = [None; 3];
    for index in 0..8 {
        let dir = format!("/sys/devices/system/cpu/cpu0/cache/index{index}");
        let read = |name: &str| std::fs::read_to_string(format!("{dir}/{name}")).ok();
        let (Some(level), Some(kind), Some(size)) = (read("level"), read("type"), read("size"))
        else {
            continue;
        };
        let slot = match (level.trim(), kind.trim()) {
            ("1", "Data") => 0,
            ("2", "Data" | "Unified") => 1,
            ("3", "Data" | "Unified") => 2,
            _ => continue,
        };
        caches[slot] = parse_cache_size(&size);
    }
    caches
}

/// LLVM's x86-64 CPUs that have AVX-512 (`llc -mcpu=X -mattr=help`: `avx512f` among their
/// own features), aliases included (`x86_cpus.tsv`).
const AVX512_CPUS: [&str; 23] = [
    "cannonlake",
    "cascadelake",
    "cooperlake",
    "emeraldrapids",
    "graniterapids",
    "graniterapids-d",
    "graniterapids_d",
    "icelake-client",
    "icelake_client",
    "icelake-server",
    "icelake_server",
    "knl",
    "knm",
    "mic_avx512",
    "rocketlake",
    "sapphirerapids",
    "skx",
    "skylake-avx512",
    "skylake_avx512",
    "tigerlake",
    "x86-64-v4",
    "znver4",
    "znver5",
];

/// FMA pipes of the full vector width (`lanes`) and FMA latency of LLVM's CPU `cpu`: the
/// vendors' optimization manuals, and measurements where they are silent. Intel's Xeons
/// from Skylake-SP on have two 512-bit FMA pipes except some Silver and Gold 5xxx parts that
/// have one (CPUID does not tell them apart: the model says two); their client parts with
/// AVX-512 one. Zen 4 runs a 512-bit FMA as two halves on its two 256-bit pipes, Zen 1 a
/// 256-bit one on its two 128-bit pipes: one full-width FMA a cycle.
fn fma_of(cpu: &str, lanes: i64) -> (i64, i64) {
    let wide = lanes >= 16;
    match cpu {
        "haswell" | "broadwell" => (2, 5),
        "znver1" => (1, 5),
        "znver2" => (2, 5),
        "znver3" => (2, 4),
        "znver4" if wide => (1, 4),
        "cannonlake" | "icelake-client" | "icelake_client" | "tigerlake" | "rocketlake" if wide => {
            (1, 4)
        }
        _ => (2, 4),
    }
}

impl CpuModel {
    /// The host's, read once per process.
    pub fn host() -> &'static CpuModel {
        static HOST: OnceLock<CpuModel> = OnceLock::new();
        HOST.get_or_init(|| {
            let unit = host_vector_unit();
            let cpu = host_cpu_name();
            let (fma_pipes, fma_latency) = fma_of(&cpu, unit.lanes);
            let [l1d, l2, l3] = host_caches();
            CpuModel {
                cpu,
                source: ModelSource::Host,
                lanes: unit.lanes,
                registers: unit.registers,
                fma_pipes,
                fma_latency,
                l1d_bytes: l1d.unwrap_or(NamedCaches::L1D),
                l2_bytes: l2.unwrap_or(NamedCaches::L2),
                l3_bytes: l3.unwrap_or(0),
                cores: std::thread::available_parallelism().map_or(1, |n| n.get() as i64),
            }
        })
    }

    /// The model of LLVM's CPU `cpu` (the host's where `None`) with `features` (LLVM style,
    /// `+avx512f,-avx2`; the vector registers follow `+avx512f`, and without features the
    /// named CPU's own, the host's where none is named), with [`NamedCaches`] and one core.
    pub fn named(cpu: Option<&str>, features: Option<&str>) -> CpuModel {
        let avx512 = match (features, cpu) {
            (Some(list), _) => list.split(',').any(|f| f.trim() == "+avx512f"),
            (None, Some(cpu)) => AVX512_CPUS.contains(&cpu),
            (None, None) => CpuModel::host().lanes >= 16,
        };
        let unit = if avx512 {
            VectorUnit::AVX512
        } else {
            VectorUnit::AVX2
        };
        let cpu = cpu.map_or_else(|| CpuModel::host().cpu.clone(), str::to_string);
        let (fma_pipes, fma_latency) = fma_of(&cpu, unit.lanes);
        CpuModel {
            cpu,
            source: ModelSource::Named,
            lanes: unit.lanes,
            registers: unit.registers,
            fma_pipes,
            fma_latency,
            l1d_bytes: NamedCaches::L1D,
            l2_bytes: NamedCaches::L2,
            l3_bytes: NamedCaches::L3,
            cores: 1,
        }
    }

    /// The vector unit register tiles are sized for, with the accumulators its pipes need.
    pub fn vector_unit(&self) -> VectorUnit {
        VectorUnit {
            lanes: self.lanes,
            registers: self.registers,
            in_flight: self.accumulators_in_flight(),
        }
    }

    /// The independent accumulators that keep every FMA pipe busy: one per pipe for every
    /// cycle of latency (a register tile with fewer waits on its own FMAs).
    pub fn accumulators_in_flight(&self) -> i64 {
        self.fma_pipes * self.fma_latency
    }

    /// The peak f32 FLOPs per cycle of one core: two per lane of every pipe.
    pub fn flops_per_cycle(&self) -> i64 {
        2 * self.lanes * self.fma_pipes
    }
}

/// The host's vector unit, from its features.
fn host_vector_unit() -> VectorUnit {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx512f") {
        return VectorUnit::AVX512;
    }
    VectorUnit::AVX2
}

/// Bytes as the caches are sized: `48 KiB`, `2 MiB`.
fn human_bytes(bytes: i64) -> String {
    match bytes {
        0 => "none".to_string(),
        b if b % (1 << 20) == 0 => format!("{} MiB", b >> 20),
        b if b % (1 << 10) == 0 => format!("{} KiB", b >> 10),
        b => format!("{b} B"),
    }
}

impl fmt::Display for CpuModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let source = match self.source {
            ModelSource::Host => "this machine",
            ModelSource::Named => {
                "named by --target-cpu/--target-features, a named target's caches"
            }
        };
        writeln!(f, "cpu: {} ({source})", self.cpu)?;
        writeln!(
            f,
            "vector registers: {} of {} f32 lanes ({} bits)",
            self.registers,
            self.lanes,
            self.lanes * 32
        )?;
        writeln!(
            f,
            "FMA: {} pipe(s), latency {} cycles: {} accumulators in flight, {} f32 FLOPs per cycle per core",
            self.fma_pipes,
            self.fma_latency,
            self.accumulators_in_flight(),
            self.flops_per_cycle()
        )?;
        let (rows, columns) = self.vector_unit().matmul_tile();
        writeln!(
            f,
            "matmul register tile: up to {rows} x {columns} ({} accumulators, two registers of B, one broadcast of A)",
            rows * columns / self.lanes.max(1)
        )?;
        writeln!(
            f,
            "caches: L1d {} and L2 {} per core, L3 {}",
            human_bytes(self.l1d_bytes),
            human_bytes(self.l2_bytes),
            human_bytes(self.l3_bytes)
        )?;
        writeln!(f, "cores: {}", self.cores)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_sizes_parse_as_sys_writes_them() {
        assert_eq!(parse_cache_size("48K\n"), Some(48 << 10));
        assert_eq!(parse_cache_size("2048K"), Some(2 << 20));
        assert_eq!(parse_cache_size("480M"), Some(480 << 20));
        assert_eq!(parse_cache_size("12"), None);
        assert_eq!(parse_cache_size("K"), None);
    }

    #[test]
    fn fma_pipes_follow_the_microarchitecture() {
        assert_eq!(fma_of("sapphirerapids", 16), (2, 4));
        assert_eq!(fma_of("icelake-client", 16), (1, 4));
        assert_eq!(fma_of("icelake-client", 8), (2, 4));
        assert_eq!(fma_of("haswell", 8), (2, 5));
        assert_eq!(fma_of("znver4", 16), (1, 4));
        assert_eq!(fma_of("znver4", 8), (2, 4));
        assert_eq!(fma_of("znver5", 16), (2, 4));
    }

    #[test]
    fn a_named_target_does_not_depend_on_the_host() {
        let model = CpuModel::named(Some("znver5"), Some("+avx512f,+avx2,+fma"));
        assert_eq!(model.vector_unit(), VectorUnit::AVX512);
        assert_eq!(model.accumulators_in_flight(), 8);
        assert_eq!(model.flops_per_cycle(), 64);
        assert_eq!(model.l2_bytes, NamedCaches::L2);
        assert_eq!(
            CpuModel::named(Some("sapphirerapids"), None).vector_unit(),
            VectorUnit::AVX512
        );
        assert_eq!(
            CpuModel::named(Some("znver3"), None).vector_unit(),
            VectorUnit {
                in_flight: 8,
                ..VectorUnit::AVX2
            }
        );
        let avx2 = CpuModel::named(Some("haswell"), Some("+avx2,+fma"));
        assert_eq!(avx2.vector_unit(), VectorUnit::AVX2);
        assert_eq!(avx2.accumulators_in_flight(), 10);
        assert_eq!(
            avx2.to_string(),
            "cpu: haswell (named by --target-cpu/--target-features, a named target's caches)\n\
             vector registers: 16 of 8 f32 lanes (256 bits)\n\
             FMA: 2 pipe(s), latency 5 cycles: 10 accumulators in flight, 32 f32 FLOPs per cycle per core\n\
             matmul register tile: up to 6 x 16 (12 accumulators, two registers of B, one broadcast of A)\n\
             caches: L1d 32 KiB and L2 1 MiB per core, L3 32 MiB\n\
             cores: 1\n"
        );
    }

    #[test]
    fn the_matmul_tile_holds_the_accumulators_every_fma_pipe_needs() {
        for cpu in [
            "haswell",
            "znver3",
            "skylake-avx512",
            "icelake-client",
            "sapphirerapids",
            "znver4",
            "znver5",
        ] {
            let model = CpuModel::named(Some(cpu), None);
            let (rows, columns) = model.vector_unit().matmul_tile();
            let accumulators = rows * columns / model.lanes;
            assert!(accumulators >= model.accumulators_in_flight(), "{cpu}");
            assert!(
                accumulators + columns / model.lanes < model.registers,
                "{cpu}"
            );
        }
    }

    #[test]
    fn the_host_model_is_read_from_the_machine() {
        let host = CpuModel::host();
        assert_eq!(host.source, ModelSource::Host);
        assert!(!host.cpu.is_empty());
        assert!(host.l2_bytes > 0 && host.l1d_bytes > 0 && host.cores >= 1);
        let unit = host.vector_unit();
        assert_eq!(
            (unit.lanes, unit.registers),
            (host_vector_unit().lanes, host_vector_unit().registers)
        );
        assert_eq!(unit.in_flight, host.accumulators_in_flight());
    }
}
