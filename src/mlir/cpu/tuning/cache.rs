//! The tuning cache file: JSON, one entry per target and kernel, written by `tessera-tune`
//! and read by every compile that is given it. Loading never fails on what the file holds: a
//! file that is no cache (bad JSON, another format or version) is reported and ignored whole,
//! an entry whose choices do not fit its kernel's loops (edited by hand, or stale) is reported
//! and ignored alone.

use crate::mlir::cpu::tuning::choice::{FusionChoice, TileChoice};
use crate::mlir::cpu::tuning::kernel_key::key_loops;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The `format` field every tuning cache starts with.
pub const FORMAT: &str = "tessera tuning cache";

/// The version of the format this build reads and writes.
pub const VERSION: u32 = 1;

/// The environment variable that names the tuning cache (empty: none).
pub const CACHE_VARIABLE: &str = "TESSERA_TUNING_CACHE";

/// What `tessera-tune` measured for an entry.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Measured {
    /// The model and function it was tuned in (`w3.tsr @f`).
    pub model: String,
    /// A call of that function with the strategy's choices, in milliseconds (median).
    pub strategy_ms: f64,
    /// A call with this entry's choices (and the entries tuned before it), in milliseconds.
    pub tuned_ms: f64,
}

/// One kernel's choices on one target.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    /// The target (`TuningTarget`'s text).
    pub target: String,
    /// The kernel (`kernel_key` or `fusion_key`).
    pub kernel: String,
    /// `tessera-tile`'s choices, for a kernel key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tiles: Option<TileChoice>,
    /// `tessera-fuse`'s choices, for a fusion key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fusion: Option<FusionChoice>,
    /// What tuning measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured: Option<Measured>,
}

impl Entry {
    /// Why the entry cannot be used, if it cannot: its key names no loops, it holds no choice
    /// or both kinds, or its choice does not fit the key's loops.
    pub fn check(&self) -> Result<(), String> {
        let loops = key_loops(&self.kernel)
            .ok_or_else(|| format!("kernel '{}' names no loops", self.kernel))?;
        match (&self.tiles, &self.fusion) {
            (Some(tiles), None) => tiles.fits(&loops),
            (None, Some(fusion)) => fusion.fits(&loops),
            (None, None) => Err("it holds neither 'tiles' nor 'fusion'".into()),
            (Some(_), Some(_)) => Err("it holds both 'tiles' and 'fusion'".into()),
        }
    }
}

/// The file as written: entries as [`Entry`]s, or as read, as JSON values each checked on
/// its own (one bad entry does not cost the others).
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct CacheFile<E> {
    format: String,
    version: u32,
    entries: Vec<E>,
}

/// A problem met reading a tuning cache: what was ignored and why.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("tuning cache {path}: {message}")]
pub struct CacheProblem {
    /// The file (with `:line:col` where the problem is at a place).
    pub path: String,
    /// What is wrong and what was ignored.
    pub message: String,
    /// Whether the whole file was ignored (else one entry).
    pub whole_file: bool,
}

/// The entries of a tuning cache by target and kernel.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TuningCache {
    entries: BTreeMap<(String, String), Entry>,
}

/// A cache as loaded, with what was ignored.
#[derive(Debug, Default)]
pub struct LoadedCache {
    /// The entries that can be used.
    pub cache: TuningCache,
    /// What was ignored and why (the whole file, or entries).
    pub problems: Vec<CacheProblem>,
}

impl TuningCache {
    /// The cache in `text` (read from `path`, named in problems): every usable entry, and a
    /// problem for each thing ignored.
    pub fn parse(text: &str, path: &Path) -> LoadedCache {
        let name = path.display().to_string();
        let whole = |message: String, at: Option<(usize, usize)>| {
            let path = match at {
                Some((line, column)) => format!("{name}:{line}:{column}"),
                None => name.clone(),
            };
            LoadedCache {
                cache: TuningCache::default(),
                problems: vec![CacheProblem {
                    path,
                    message: format!("{message}; the file is ignored"),
                    whole_file: true,
                }],
            }
        };
        let file: CacheFile<serde_json::Value> = match serde_json::from_str(text) {
            Ok(file) => file,
            Err(e) => {
                let message = e.to_string();
                let message = message
                    .split(" at line ")
                    .next()
                    .unwrap_or(&message)
                    .to_string();
                return whole(message, Some((e.line(), e.column())));
            }
        };
        if file.format != FORMAT {
            return whole(
                format!("its format is '{}', not '{FORMAT}'", file.format),
                None,
            );
        }
        if file.version != VERSION {
            return whole(
                format!(
                    "it is version {} of the format, this tessera reads version {VERSION}",
                    file.version
                ),
                None,
            );
        }
        let mut loaded = LoadedCache::default();
        for (i, value) in file.entries.into_iter().enumerate() {
            let kernel = value
                .get("kernel")
                .and_then(serde_json::Value::as_str)
                .unwrap_or("?")
                .to_string();
            let entry = serde_json::from_value::<Entry>(value).map_err(|e| e.to_string());
            match entry.and_then(|entry| entry.check().map(|()| entry)) {
                Ok(entry) => loaded.cache.insert(entry),
                Err(why) => loaded.problems.push(CacheProblem {
                    path: name.clone(),
                    message: format!(
                        "entry {} (kernel '{kernel}'): {why}; the entry is ignored",
                        i + 1
                    ),
                    whole_file: false,
                }),
            }
        }
        loaded
    }

    /// The cache at `path`: an empty one, with a problem, when it cannot be read (a missing
    /// file is no problem: nothing was tuned yet).
    pub fn load(path: &Path) -> LoadedCache {
        match std::fs::read(path) {
            Ok(bytes) => match String::from_utf8(bytes) {
                Ok(text) => TuningCache::parse(&text, path),
                Err(_) => LoadedCache {
                    cache: TuningCache::default(),
                    problems: vec![CacheProblem {
                        path: path.display().to_string(),
                        message: "it is not UTF-8 text; the file is ignored".into(),
                        whole_file: true,
                    }],
                },
            },
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => LoadedCache::default(),
            Err(e) => LoadedCache {
                cache: TuningCache::default(),
                problems: vec![CacheProblem {
                    path: path.display().to_string(),
                    message: format!("it cannot be read ({e}); the file is ignored"),
                    whole_file: true,
                }],
            },
        }
    }

    /// Adds `entry`, replacing the one for its target and kernel.
    pub fn insert(&mut self, entry: Entry) {
        self.entries
            .insert((entry.target.clone(), entry.kernel.clone()), entry);
    }

    /// Removes the entry for `target` and `kernel`.
    pub fn remove(&mut self, target: &str, kernel: &str) {
        self.entries
            .remove(&(target.to_string(), kernel.to_string()));
    }

    /// The entry for `target` and `kernel`.
    pub fn get(&self, target: &str, kernel: &str) -> Option<&Entry> {
        self.entries.get(&(target.to_string(), kernel.to_string()))
    }

    /// The tile choice for `kernel` on `target`.
    pub fn tiles(&self, target: &str, kernel: &str) -> Option<&TileChoice> {
        self.get(target, kernel)?.tiles.as_ref()
    }

    /// The fusion choice for `kernel` on `target`.
    pub fn fusion(&self, target: &str, kernel: &str) -> Option<&FusionChoice> {
        self.get(target, kernel)?.fusion.as_ref()
    }

    /// Every entry, by target then kernel.
    pub fn entries(&self) -> impl Iterator<Item = &Entry> {
        self.entries.values()
    }

    /// The file's text: pretty JSON, entries sorted by target and kernel.
    pub fn to_text(&self) -> String {
        let file: CacheFile<Entry> = CacheFile {
            format: FORMAT.into(),
            version: VERSION,
            entries: self.entries.values().cloned().collect(),
        };
        let mut text = one_line_arrays(&serde_json::to_string_pretty(&file).unwrap_or_default());
        text.push('\n');
        text
    }

    /// Writes the cache to `path` (its folder made if missing) through a file beside it,
    /// renamed over it, so that a reader never sees half a cache.
    pub fn save(&self, path: &Path) -> std::io::Result<()> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)?;
        }
        let mut partial = path.as_os_str().to_owned();
        partial.push(format!(".{}.partial", std::process::id()));
        let partial = PathBuf::from(partial);
        std::fs::write(&partial, self.to_text())?;
        std::fs::rename(&partial, path)
    }
}

/// Pretty JSON with each array of numbers on one line (`"cache": [0, 32, 128]`), as a
/// person reads a tile choice.
fn one_line_arrays(pretty: &str) -> String {
    let mut out = String::with_capacity(pretty.len());
    let mut lines = pretty.lines().peekable();
    while let Some(line) = lines.next() {
        if line.trim_end().ends_with('[') {
            let mut items = Vec::new();
            let mut originals = Vec::new();
            while let Some(&next) = lines.peek() {
                let item = next.trim().trim_end_matches(',');
                if item.is_empty() || !item.chars().all(|c| c.is_ascii_digit() || c == '-') {
                    break;
                }
                items.push(item.to_string());
                originals.push(next);
                lines.next();
            }
            let closing = lines.peek().map(|l| l.trim());
            if !items.is_empty() && matches!(closing, Some("]" | "],")) {
                let comma = if closing == Some("],") { "," } else { "" };
                lines.next();
                out.push_str(&format!(
                    "{}{}]{comma}\n",
                    line.trim_end(),
                    items.join(", ")
                ));
                continue;
            }
            for original in std::iter::once(line).chain(originals) {
                out.push_str(original);
                out.push('\n');
            }
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    out.trim_end().to_string()
}

/// The tuning cache a tool uses: `flag` (`--tuning-cache FILE`) when given, else
/// `TESSERA_TUNING_CACHE` when set (empty: none), else `$XDG_CACHE_HOME/tessera/tuning.json`
/// or `$HOME/.cache/tessera/tuning.json`.
pub fn cache_path(flag: Option<&Path>) -> Option<PathBuf> {
    if let Some(path) = flag {
        return Some(path.to_path_buf());
    }
    if let Some(value) = std::env::var_os(CACHE_VARIABLE) {
        return (!value.is_empty()).then(|| PathBuf::from(value));
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cache")))?;
    Some(base.join("tessera").join("tuning.json"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry() -> Entry {
        Entry {
            target: "haswell avx2 l2=262144 threads=1".into(),
            kernel: "linalg.matmul [64, 96, 128r] f32 f32 f32".into(),
            tiles: Some(TileChoice {
                cache: vec![0, 32, 0],
                register: vec![8, 16, 1],
                order: vec![0, 1, 2],
                panels: false,
            }),
            fusion: None,
            measured: Some(Measured {
                model: "m.tsr @f".into(),
                strategy_ms: 1.5,
                tuned_ms: 1.25,
            }),
        }
    }

    #[test]
    fn a_saved_cache_reads_back() {
        let mut cache = TuningCache::default();
        cache.insert(entry());
        let text = cache.to_text();
        assert!(
            text.contains("\"format\": \"tessera tuning cache\""),
            "{text}"
        );
        assert!(text.contains("\"cache\": [0, 32, 0],\n"), "{text}");
        let loaded = TuningCache::parse(&text, Path::new("t.json"));
        assert!(loaded.problems.is_empty(), "{:?}", loaded.problems);
        assert_eq!(loaded.cache, cache);
        let e = entry();
        assert_eq!(loaded.cache.tiles(&e.target, &e.kernel), e.tiles.as_ref());
        assert_eq!(loaded.cache.fusion(&e.target, &e.kernel), None);
    }

    #[test]
    fn a_corrupt_file_is_ignored_with_its_place() {
        let loaded = TuningCache::parse("{\n  \"format\": tessera\n}", Path::new("t.json"));
        assert_eq!(loaded.cache, TuningCache::default());
        assert_eq!(loaded.problems.len(), 1);
        let problem = loaded.problems[0].to_string();
        assert!(problem.starts_with("tuning cache t.json:2:"), "{problem}");
        assert!(problem.ends_with("the file is ignored"), "{problem}");
        let other = TuningCache::parse(
            "{\"format\": \"tessera tuning cache\", \"version\": 7, \"entries\": []}",
            Path::new("t.json"),
        );
        assert!(other.problems[0].message.contains("version 7"));
    }

    #[test]
    fn an_entry_that_does_not_fit_is_ignored_alone() {
        let mut cache = TuningCache::default();
        cache.insert(entry());
        let mut stale = entry();
        stale.kernel = "linalg.matmul [64, 90, 128r] f32 f32 f32".into();
        let text = cache.to_text().replacen(
            "\"entries\": [",
            &format!("\"entries\": [{},", serde_json::to_string(&stale).unwrap()),
            1,
        );
        let loaded = TuningCache::parse(&text, Path::new("t.json"));
        assert_eq!(loaded.cache, cache);
        assert_eq!(loaded.problems.len(), 1);
        let message = &loaded.problems[0].message;
        assert!(
            message.starts_with("entry 1 (kernel 'linalg.matmul [64, 90"),
            "{message}"
        );
        assert!(
            message.contains("32 does not divide loop 1 of 90"),
            "{message}"
        );
    }

    #[test]
    fn a_mistyped_entry_is_ignored_alone() {
        let mut cache = TuningCache::default();
        cache.insert(entry());
        let text = cache.to_text().replacen(
            "\"entries\": [",
            "\"entries\": [{\"target\": \"t\", \"kernel\": \"k [4]\", \"tiles\": {\"cache\": [1.5]}}, {\"kernel\": \"x [2]\", \"colour\": 1},",
            1,
        );
        let loaded = TuningCache::parse(&text, Path::new("t.json"));
        assert_eq!(loaded.cache, cache);
        assert_eq!(loaded.problems.len(), 2, "{:?}", loaded.problems);
        assert!(loaded.problems[0]
            .message
            .starts_with("entry 1 (kernel 'k [4]'): "));
        assert!(loaded.problems[1]
            .message
            .contains("unknown field `colour`"));
        assert!(loaded.problems.iter().all(|p| !p.whole_file));
    }

    #[test]
    fn a_missing_file_is_an_empty_cache() {
        let loaded = TuningCache::load(Path::new("/nonexistent/tessera/tuning.json"));
        assert!(loaded.problems.is_empty());
        assert_eq!(loaded.cache.entries().count(), 0);
    }
}
