//! The built-in benchmark suite: the seed's workloads as tessera models (fp32, weights as
//! function arguments), generated at their sizes, and user models read from files.

use crate::registry;
use std::sync::Arc;
use tessera::diag::Diagnostic;
use tessera::frontend::{load, load_with};
use tessera::ir::Module;
use tessera::source::SourceFile;
use tessera::weights::MemoryStore;

/// What bounds a workload's speed, for the figure reported next to its latency.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bound {
    /// Arithmetic: GFLOP/s against the FMA peak.
    Compute,
    /// Memory traffic: GB/s of its inputs and outputs against the copy bandwidth.
    Memory,
}

/// One benchmark workload: a model and the function to time.
#[derive(Clone, Debug)]
pub struct Workload {
    /// Its id (`w1_b64`), or the model's file name for a user model.
    pub id: String,
    /// One line: what it computes.
    pub title: String,
    /// The model's text (`.tsr`).
    pub source: String,
    /// Where the text came from (a file path, or `<id>.tsr` for the built-in ones).
    pub path: String,
    /// The function to time.
    pub entry: String,
    /// What bounds it.
    pub bound: Bound,
    /// For an imported model: the side file its text refers to, in memory.
    pub weights: Option<Arc<MemoryStore>>,
}

impl Workload {
    /// The workload through the front end: its text, and the module or the diagnostics.
    pub fn load(&self) -> (SourceFile, Result<Module, Vec<Diagnostic>>) {
        let file = SourceFile::new(self.path.clone(), self.source.clone());
        let range = 0..file.text().len();
        let module = match &self.weights {
            Some(weights) => load_with(&file, range, &registry(), weights.as_ref()),
            None => load(&file, range, &registry()),
        };
        (file, module)
    }
}

/// The ids of the built-in workloads, in suite order.
pub const BUILTIN_IDS: [&str; 8] = ["w1_b1", "w1_b64", "w1_b4096", "w2", "w3", "w4", "w5", "w6"];

/// Built-in workloads run only when named: `w3_4096` (a 4096-cube product, 137 GFLOP: about a
/// millisecond on a large GPU, seconds on one CPU core).
pub const EXTRA_IDS: [&str; 1] = ["w3_4096"];

/// The built-in workload `id`, if there is one.
pub fn builtin(id: &str) -> Option<Workload> {
    let (title, source, bound) = match id {
        "w1_b1" => seed_mlp(1),
        "w1_b64" => seed_mlp(64),
        "w1_b4096" => seed_mlp(4096),
        "w2" => (
            "MLP-large: x[256,784] -> dense 1024 + relu -> dense 1024 + relu -> dense 10 + softmax"
                .into(),
            MLP_LARGE.to_string(),
            Bound::Compute,
        ),
        "w3" => ("matmul 1024x1024x1024".into(), matmul(1024), Bound::Compute),
        "w3_4096" => ("matmul 4096x4096x4096".into(), matmul(4096), Bound::Compute),
        "w4" => (
            "layer_norm (eps 1e-5) -> gelu (tanh) -> + x on x[4096,1024]".into(),
            LAYER_NORM_GELU.to_string(),
            Bound::Memory,
        ),
        "w5" => (
            "attention softmax(q k^T / 8) v, q, k, v [512,64]".into(),
            ATTENTION.to_string(),
            Bound::Compute,
        ),
        "w6" => (
            "conv net: conv2d 3x3 same + relu + max_pool 2x2 + dense 10, batch 32 of 28x28x1"
                .into(),
            CONV_NET.to_string(),
            Bound::Compute,
        ),
        _ => return None,
    };
    Some(Workload {
        id: id.to_string(),
        title,
        source,
        path: format!("{id}.tsr"),
        entry: "f".to_string(),
        bound,
        weights: None,
    })
}

/// W1: the seed MLP at batch `batch`.
fn seed_mlp(batch: usize) -> (String, String, Bound) {
    (
        format!("seed MLP: x[{batch},784] -> dense 10 + relu -> dense 10 + softmax"),
        format!(
            "func @f(%x: tensor<{batch}x784xf32>, %w1: tensor<784x10xf32>, %b1: tensor<10xf32>,
         %w2: tensor<10x10xf32>, %b2: tensor<10xf32>) -> tensor<{batch}x10xf32> {{
  %h = nn.dense %x, %w1, %b1 : tensor<{batch}x10xf32>
  %a = nn.relu %h
  %l = nn.dense %a, %w2, %b2 : tensor<{batch}x10xf32>
  %y = nn.softmax %l
  return %y : tensor<{batch}x10xf32>
}}
"
        ),
        if batch >= 64 {
            Bound::Compute
        } else {
            Bound::Memory
        },
    )
}

const MLP_LARGE: &str =
    "func @f(%x: tensor<256x784xf32>, %w1: tensor<784x1024xf32>, %b1: tensor<1024xf32>,
         %w2: tensor<1024x1024xf32>, %b2: tensor<1024xf32>,
         %w3: tensor<1024x10xf32>, %b3: tensor<10xf32>) -> tensor<256x10xf32> {
  %h1 = nn.dense %x, %w1, %b1 : tensor<256x1024xf32>
  %a1 = nn.relu %h1
  %h2 = nn.dense %a1, %w2, %b2 : tensor<256x1024xf32>
  %a2 = nn.relu %h2
  %l = nn.dense %a2, %w3, %b3 : tensor<256x10xf32>
  %y = nn.softmax %l
  return %y : tensor<256x10xf32>
}
";

/// W3: a square matrix product of side `n`.
fn matmul(n: usize) -> String {
    format!(
        "func @f(%a: tensor<{n}x{n}xf32>, %b: tensor<{n}x{n}xf32>) -> tensor<{n}x{n}xf32> {{
  %c = array.matmul %a, %b
  return %c : tensor<{n}x{n}xf32>
}}
"
    )
}

const LAYER_NORM_GELU: &str =
    "func @f(%x: tensor<4096x1024xf32>, %gamma: tensor<1024xf32>, %beta: tensor<1024xf32>)
    -> tensor<4096x1024xf32> {
  %n = nn.layer_norm %x, %gamma, %beta {epsilon = 1.0e-5}
  %g = nn.gelu %n {approximate = \"tanh\"}
  %y = array.add %g, %x
  return %y : tensor<4096x1024xf32>
}
";

const ATTENTION: &str =
    "func @f(%q: tensor<512x64xf32>, %k: tensor<512x64xf32>, %v: tensor<512x64xf32>)
    -> tensor<512x64xf32> {
  %y = nn.attention %q, %k, %v {scale = 0.125}
  return %y : tensor<512x64xf32>
}
";

const CONV_NET: &str =
    "func @f(%x: tensor<32x28x28x1xf32>, %w: tensor<3x3x1x16xf32>, %b: tensor<16xf32>,
         %wd: tensor<3136x10xf32>, %bd: tensor<10xf32>) -> tensor<32x10xf32> {
  %c = nn.conv2d %x, %w, %b {padding = \"same\"} : tensor<32x28x28x16xf32>
  %r = nn.relu %c
  %p = nn.max_pool2d %r {window = [2, 2]} : tensor<32x14x14x16xf32>
  %flat = array.reshape %p : tensor<32x3136xf32>
  %y = nn.dense %flat, %wd, %bd : tensor<32x10xf32>
  return %y : tensor<32x10xf32>
}
";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_id_names_a_workload() {
        for id in BUILTIN_IDS.iter().chain(&EXTRA_IDS) {
            assert_eq!(builtin(id).map(|w| w.id), Some(id.to_string()));
        }
        assert!(builtin("w7").is_none());
    }
}
