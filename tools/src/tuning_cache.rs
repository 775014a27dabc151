//! The tuning cache every tool compiles with: found (`--tuning-cache FILE`,
//! `TESSERA_TUNING_CACHE`, or the default path), read with every problem reported as a
//! warning, and handed to the preset's stages that look choices up in it.

use std::io::Write;
use std::path::Path;
use tessera::mlir::cpu::tuning::cache::cache_path;
use tessera::mlir::cpu::tuning::TuningCache;
use tessera::mlir::pipeline::Pipeline;

/// Gives `pipeline` (a CPU preset) the tuning cache [`usable`] finds, if any. `cpu` is the
/// CPU named with `--target-cpu` (the host's where `None`); `unit` the vector unit of a named
/// target.
pub fn apply(
    pipeline: &mut Pipeline,
    flag: Option<&Path>,
    cpu: Option<&str>,
    unit: Option<&str>,
    err: &mut dyn Write,
) {
    if let Some(path) = usable(flag, err) {
        pipeline.set_tuning_cache(&path, cpu, unit);
    }
}

/// The path of the tuning cache `flag` names, or the default one, when that file exists and
/// is a tuning cache with entries; warns on `err` about whatever in it is ignored (a corrupt
/// file, entries that do not fit their kernels). A corrupt cache never stops a compile: the
/// strategy's choices are used instead.
pub fn usable(flag: Option<&Path>, err: &mut dyn Write) -> Option<String> {
    let path = cache_path(flag)?;
    if !path.exists() {
        if flag.is_some() {
            let _ = writeln!(
                err,
                "warning: tuning cache {}: no such file; compiling with the strategy's choices",
                path.display()
            );
        }
        return None;
    }
    let loaded = TuningCache::load(&path);
    for problem in &loaded.problems {
        let _ = writeln!(err, "warning: {problem}");
    }
    if loaded.problems.iter().any(|p| p.whole_file) || loaded.cache.entries().next().is_none() {
        return None;
    }
    let text = path.display().to_string();
    if text.contains(crate::tune::UNSAFE_IN_OPTIONS) {
        let _ = writeln!(
            err,
            "warning: tuning cache {text}: a pipeline option cannot hold its path (spaces, commas, braces or '='); it is ignored"
        );
        return None;
    }
    Some(text)
}
