//! Corrupt models never crash the reader: every truncation of a real model, and random byte
//! changes to it and to its external data entries, read as a model or as an error.

use proptest::prelude::*;
use std::path::{Path, PathBuf};
use tessera_onnx::read_model;

fn testdata(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/onnx")
        .join(path)
}

/// A folder of its own for one case: the model bytes as `model.onnx`, beside a copy of the
/// external weights.
fn case_folder(bytes: &[u8]) -> tempdir::Folder {
    let folder = tempdir::Folder::new();
    std::fs::write(folder.path().join("model.onnx"), bytes).unwrap();
    std::fs::copy(
        testdata("external/weights.bin"),
        folder.path().join("weights.bin"),
    )
    .unwrap();
    folder
}

/// A temporary folder, removed when dropped.
mod tempdir {
    use std::path::{Path, PathBuf};
    use std::sync::atomic::{AtomicUsize, Ordering};

    static NEXT: AtomicUsize = AtomicUsize::new(0);

    pub struct Folder(PathBuf);

    impl Folder {
        pub fn new() -> Folder {
            let path = std::env::temp_dir().join(format!(
                "tessera-onnx-{}-{}",
                std::process::id(),
                NEXT.fetch_add(1, Ordering::Relaxed)
            ));
            std::fs::create_dir_all(&path).unwrap();
            Folder(path)
        }

        pub fn path(&self) -> &Path {
            &self.0
        }
    }

    impl Drop for Folder {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

fn read(folder: &Path) {
    // Ok or Err; a panic fails the test.
    let _ = read_model(&folder.join("model.onnx"));
}

#[test]
fn every_truncation_of_a_model_reads_or_fails_cleanly() {
    for name in ["dense_relu.onnx", "external/dense_relu.onnx"] {
        let bytes = std::fs::read(testdata(name)).unwrap();
        for end in 0..bytes.len() {
            let folder = case_folder(&bytes[..end]);
            read(folder.path());
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn changed_bytes_read_or_fail_cleanly(
        external in any::<bool>(),
        changes in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8),
    ) {
        let name = if external { "external/dense_relu.onnx" } else { "dense_relu.onnx" };
        let mut bytes = std::fs::read(testdata(name)).unwrap();
        for (at, byte) in changes {
            let i = at.index(bytes.len());
            bytes[i] = byte;
        }
        let folder = case_folder(&bytes);
        read(folder.path());
    }
}
