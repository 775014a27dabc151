//! insta snapshots of the fusion report of every model at -O3 (text), so that a change in
//! what fuses is reviewed.

use crate::common::{relative, root, tsr_files};
use std::process::Command;

#[test]
fn fusion_report_of_every_model() {
    for path in tsr_files("testdata/models") {
        let name = relative(&path);
        let out = Command::new(env!("CARGO_BIN_EXE_tessera-opt"))
            .env("TESSERA_TUNING_CACHE", "")
            .args([name.as_str(), "-O3", "--fusion-report"])
            .current_dir(root())
            .output()
            .expect("tessera-opt starts");
        assert!(
            out.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let file = name.rsplit('/').next().unwrap_or(&name).to_string();
        insta::with_settings!({ snapshot_suffix => file, input_file => name.clone() }, {
            insta::assert_snapshot!(String::from_utf8_lossy(&out.stdout));
        });
    }
}
