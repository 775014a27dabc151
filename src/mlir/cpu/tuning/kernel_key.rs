//! The keys a tuning cache finds entries by: the target (CPU, vector unit, L2, threads) and
//! the kernel, by its structure and shapes as the stage that makes the choice sees it. Two
//! ops with one key get one entry, in any model: an op's name, its loops (extent, `r` for a
//! reduction), its operands' element types and, for a `linalg.generic`, its indexing maps
//! and the ops of its body.

use crate::mlir::bridge::walk::WalkedOp;
use crate::mlir::pipeline::loop_nest::Loops;
use std::fmt;

/// The target a tuned choice was measured on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TuningTarget {
    /// The CPU's name, as LLVM knows it.
    pub cpu: String,
    /// The vector unit register tiles are sized for (`avx2`, `avx512`).
    pub unit: &'static str,
    /// Bytes of L2 per core.
    pub l2_bytes: i64,
    /// The threads the code runs on.
    pub threads: i64,
}

impl fmt::Display for TuningTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {} l2={} threads={}",
            self.cpu, self.unit, self.l2_bytes, self.threads
        )
    }
}

/// Loops as a key writes them: `[64, 96, 128r]`.
fn loops_text(loops: &Loops) -> String {
    let loops: Vec<String> = loops
        .0
        .iter()
        .map(|&(extent, reduction)| format!("{extent}{}", if reduction { "r" } else { "" }))
        .collect();
    format!("[{}]", loops.join(", "))
}

/// The key of `op`, whose loops are `loops`: `linalg.matmul [64, 96, 128r] f32 f32 f32`, a
/// generic followed by `maps (d0, d1) -> (d0, d1); ... body arith.addf, math.exp`.
pub fn kernel_key(op: &WalkedOp<'_>, loops: &Loops) -> String {
    let mut key = format!(
        "{} {} {}",
        op.name(),
        loops_text(loops),
        op.operand_element_types().join(" ")
    );
    if op.name() == "linalg.generic" {
        if let Some(maps) = op.attribute("indexing_maps") {
            let maps = maps.to_string();
            let maps: Vec<&str> = maps
                .trim_start_matches('[')
                .trim_end_matches(']')
                .split("affine_map<")
                .map(|m| m.trim().trim_end_matches(',').trim().trim_end_matches('>'))
                .filter(|m| !m.is_empty())
                .collect();
            key.push_str(&format!(" maps {}", maps.join("; ")));
        }
        let body: Vec<String> = op
            .nested_ops()
            .iter()
            .map(WalkedOp::name)
            .filter(|name| name != "linalg.yield")
            .collect();
        key.push_str(&format!(" body {}", body.join(", ")));
    }
    key
}

/// The key of the fusion of contraction `anchor` (key `anchor_key`) into its epilogue
/// (key `epilogue_key`).
pub fn fusion_key(anchor_key: &str, epilogue_key: &str) -> String {
    format!("fuse {anchor_key} into {epilogue_key}")
}

/// The loops a key names (its first `[...]`; for a fusion key, the epilogue's), if it names
/// any.
pub fn key_loops(key: &str) -> Option<Loops> {
    let key = key
        .rsplit_once(" into ")
        .map_or(key, |(_, epilogue)| epilogue);
    let start = key.find('[')?;
    let end = start + key[start..].find(']')?;
    key[start + 1..end]
        .split(',')
        .map(|item| {
            let item = item.trim();
            let (digits, reduction) = match item.strip_suffix('r') {
                Some(digits) => (digits, true),
                None => (item, false),
            };
            digits
                .parse::<i64>()
                .ok()
                .filter(|&e| e > 0)
                .map(|e| (e, reduction))
        })
        .collect::<Option<Vec<_>>>()
        .map(Loops)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_name_their_loops() {
        let loops = Loops(vec![(64, false), (96, false), (128, true)]);
        assert_eq!(loops_text(&loops), "[64, 96, 128r]");
        let key = format!("linalg.matmul {} f32 f32 f32", loops_text(&loops));
        assert_eq!(key_loops(&key), Some(loops));
        let epilogue = "linalg.generic [64, 96] f32 f32 maps (d0, d1) -> (d0, d1) body arith.addf";
        let fused = fusion_key(&key, epilogue);
        assert_eq!(
            key_loops(&fused),
            Some(Loops(vec![(64, false), (96, false)]))
        );
        assert_eq!(key_loops("linalg.matmul [64, x] f32"), None);
        assert_eq!(key_loops("no loops"), None);
    }

    #[test]
    fn a_target_reads_as_written() {
        let target = TuningTarget {
            cpu: "znver4".into(),
            unit: "avx512",
            l2_bytes: 1 << 20,
            threads: 2,
        };
        assert_eq!(target.to_string(), "znver4 avx512 l2=1048576 threads=2");
    }
}
