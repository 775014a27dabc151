//! Paths named inside a model or a `.tsr` file, confined to that file's folder: a file from
//! anywhere must not make tessera read `/etc/shadow` or `../../secrets`.

use std::path::{Path, PathBuf};

/// The file `name` in `folder`, resolved through links, when it exists and lies inside the
/// folder; otherwise why not (one sentence naming `name`).
pub fn confined(folder: &Path, name: &str) -> Result<PathBuf, String> {
    let base = folder
        .canonicalize()
        .map_err(|e| format!("the folder '{}' cannot be opened: {e}", folder.display()))?;
    let file = base
        .join(name)
        .canonicalize()
        .map_err(|e| format!("'{name}' cannot be opened: {e}"))?;
    if !file.starts_with(&base) {
        return Err(format!(
            "'{name}' lies outside the folder '{}': refused",
            base.display()
        ));
    }
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_paths_out_of_the_folder() {
        let dir = std::env::temp_dir().join(format!("tessera-confine-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("inner")).unwrap();
        std::fs::write(dir.join("inner/w.bin"), b"x").unwrap();
        std::fs::write(dir.join("outside.bin"), b"x").unwrap();
        let inner = dir.join("inner");
        assert!(confined(&inner, "w.bin").is_ok());
        let up = confined(&inner, "../outside.bin").unwrap_err();
        assert!(up.contains("outside the folder"), "{up}");
        let absolute = dir.join("outside.bin").display().to_string();
        assert!(confined(&inner, &absolute).unwrap_err().contains("refused"));
        assert!(confined(&inner, "missing.bin")
            .unwrap_err()
            .contains("cannot be opened"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
