//! Finding peer executables: a bare program name is looked up next to the `rpcarena` executable
//! first (so a built workspace finds its own Rust peer), then on PATH; a relative path is relative
//! to the campaign file's directory.

use std::path::{Path, PathBuf};

/// Resolves `command[0]` to an absolute path; the rest of the vector is kept.
pub fn resolve_command(
    command: &[String],
    campaign_dir: &Path,
    exe_dir: Option<&Path>,
) -> Result<Vec<String>, String> {
    let Some((program, rest)) = command.split_first() else {
        return Err("the command is empty".to_string());
    };
    let resolved = if program.contains('/') {
        let path = Path::new(program);
        let path = if path.is_absolute() {
            path.to_path_buf()
        } else {
            campaign_dir.join(path)
        };
        if !is_executable(&path) {
            return Err(format!(
                "{} does not exist or is not executable",
                path.display()
            ));
        }
        path
    } else {
        let mut searched: Vec<PathBuf> = Vec::new();
        let beside = exe_dir.map(|d| d.join(program));
        let on_path = std::env::var_os("PATH")
            .map(|p| {
                std::env::split_paths(&p)
                    .map(|d| d.join(program))
                    .collect::<Vec<_>>()
            })
            .unwrap_or_default();
        let found = beside.into_iter().chain(on_path).find(|candidate| {
            searched.push(candidate.clone());
            is_executable(candidate)
        });
        match found {
            Some(path) => path,
            None => {
                return Err(format!(
                    "{program} was not found next to rpcarena ({}) or on PATH; build it (cargo build --release --locked) or give its path",
                    exe_dir.map_or("unknown".to_string(), |d| d.display().to_string())
                ));
            }
        }
    };
    let absolute = resolved.canonicalize().unwrap_or(resolved);
    let mut out = vec![absolute.display().to_string()];
    out.extend(rest.iter().cloned());
    Ok(out)
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata()
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_beside_then_path_and_explains_misses() {
        let dir = tempfile::tempdir().unwrap();
        let exe = dir.path().join("peer");
        std::fs::write(&exe, "#!/bin/sh\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
        let cmd = vec!["peer".to_string(), "--x".to_string()];
        let got = resolve_command(&cmd, Path::new("/"), Some(dir.path())).unwrap();
        assert!(got[0].ends_with("/peer") && got[1] == "--x");
        let sh = resolve_command(&["sh".to_string()], Path::new("/"), None).unwrap();
        assert!(sh[0].starts_with('/'));
        let rel = resolve_command(&["./peer".to_string()], dir.path(), None).unwrap();
        assert!(rel[0].ends_with("/peer"));
        let err = resolve_command(
            &["no-such-peer".to_string()],
            Path::new("/"),
            Some(dir.path()),
        )
        .unwrap_err();
        assert!(err.contains("not found next to rpcarena"), "{err}");
    }
}
