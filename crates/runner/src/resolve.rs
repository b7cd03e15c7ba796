//! Finding peer executables: a bare program name is looked up next to the `rpcarena` executable
//! first (so a built workspace finds its own Rust peer), then on PATH; a relative path is relative
//! to the campaign file's directory.

use rpcarena_model::peerdir::{self, PEER_TOML, PeerToml};
use std::path::{Path, PathBuf};

/// A peer named by id without a command: `rust` is the Rust peer next to `rpcarena`; any other
/// id is the built peer of `<root>/<id>/peer.toml` in the first of `roots` that has one. Returns
/// the resolved command and the folder (for a folder peer).
pub fn resolve_peer_id(
    id: &str,
    roots: &[PathBuf],
    exe_dir: Option<&Path>,
) -> Result<(Vec<String>, Option<PathBuf>), String> {
    if id == peerdir::RUST {
        let command = [peerdir::RUST_EXECUTABLE.to_string()];
        return Ok((resolve_command(&command, Path::new("."), exe_dir)?, None));
    }
    let Some(folder) = roots
        .iter()
        .map(|root| root.join(id))
        .find(|folder| folder.join(PEER_TOML).is_file())
    else {
        let searched: Vec<String> = roots.iter().map(|r| r.display().to_string()).collect();
        return Err(format!(
            "no command, and no {id}/{PEER_TOML} in {}; give the peer a command, or the folder holding <id>/{PEER_TOML} with --peers DIR",
            searched.join(", ")
        ));
    };
    let toml_path = folder.join(PEER_TOML);
    let text = std::fs::read_to_string(&toml_path)
        .map_err(|e| format!("reading {}: {e}", toml_path.display()))?;
    let peer = PeerToml::parse(&text, &toml_path)?;
    let command = peer.command_in(&folder);
    let resolved = resolve_command(&command, &folder, exe_dir).map_err(|e| {
        format!(
            "{e}; build it with `rpcarena peers build {id}` (reads {})",
            toml_path.display()
        )
    })?;
    Ok((resolved, Some(folder)))
}

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

    #[test]
    fn a_peer_id_resolves_to_its_folder_and_says_how_to_build_it() {
        use std::os::unix::fs::PermissionsExt;
        let root = tempfile::tempdir().unwrap();
        let folder = root.path().join("peers/go");
        std::fs::create_dir_all(&folder).unwrap();
        std::fs::write(
            folder.join("peer.toml"),
            "id = \"go\"\nlanguage = \"go\"\ncommand = [\"bin/peer\", \"-v\"]\nbuild = [\"./build.sh\"]\n",
        )
        .unwrap();
        let roots = peerdir::search_roots(None, &root.path().join("campaigns"));
        let err = resolve_peer_id("go", &roots, None).unwrap_err();
        assert!(err.contains("rpcarena peers build go"), "{err}");
        std::fs::create_dir(folder.join("bin")).unwrap();
        std::fs::write(folder.join("bin/peer"), "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(
            folder.join("bin/peer"),
            std::fs::Permissions::from_mode(0o755),
        )
        .unwrap();
        let (command, dir) = resolve_peer_id("go", &roots, None).unwrap();
        assert!(command[0].ends_with("peers/go/bin/peer"), "{command:?}");
        assert_eq!(command[1], "-v");
        assert!(dir.is_some());
        let err = resolve_peer_id("kotlin", &roots, None).unwrap_err();
        assert!(err.contains("no command, and no kotlin/peer.toml"), "{err}");
    }
}
