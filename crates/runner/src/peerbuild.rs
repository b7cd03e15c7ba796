//! `rpcarena peers build|list`: the peers of `peers/<language>/`, each described by its
//! `peer.toml` (docs/peer-protocol.md, "Peers in campaigns"): check the tools it needs (a
//! missing one is named with how to install it), record their versions, run its build in its
//! folder, and say whether the built command answers `capabilities`.

use crate::capabilities;
use rpcarena_model::peerdir::{PEER_TOML, PeerToml};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// A peer folder found under a `peers/` directory.
#[derive(Debug, Clone)]
pub struct PeerFolder {
    /// The folder.
    pub dir: PathBuf,
    /// Its `peer.toml`.
    pub toml: PeerToml,
}

/// Every `<root>/<id>/peer.toml` under `root`, sorted by id; unreadable ones are errors.
pub fn list(root: &Path) -> Result<Vec<PeerFolder>, String> {
    let entries =
        std::fs::read_dir(root).map_err(|e| format!("listing peers in {}: {e}", root.display()))?;
    let mut out = Vec::new();
    for entry in entries.flatten() {
        let dir = entry.path();
        let path = dir.join(PEER_TOML);
        if !path.is_file() {
            continue;
        }
        let text = std::fs::read_to_string(&path)
            .map_err(|e| format!("reading {}: {e}", path.display()))?;
        out.push(PeerFolder {
            toml: PeerToml::parse(&text, &path)?,
            dir,
        });
    }
    out.sort_by(|a, b| a.toml.id.cmp(&b.toml.id));
    Ok(out)
}

/// What building one peer gave.
#[derive(Debug, Clone)]
pub struct BuildResult {
    /// Peer id.
    pub id: String,
    /// Tool name to its version line (or why it could not be read).
    pub toolchain: Vec<(String, String)>,
    /// `None`: built, and the built command answered `capabilities`; `Some`: why not.
    pub failure: Option<String>,
    /// Wall time of the build.
    pub elapsed: Duration,
}

fn on_path(tool: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|p| {
        std::env::split_paths(&p).any(|d| {
            use std::os::unix::fs::PermissionsExt;
            d.join(tool)
                .metadata()
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
    })
}

/// The first line of a version command's output, or why there is none.
fn version_of(argv: &[String]) -> String {
    let Some((program, args)) = argv.split_first() else {
        return "(no version command)".to_string();
    };
    match Command::new(program).args(args).output() {
        Ok(out) if out.status.success() => {
            let text = String::from_utf8_lossy(&out.stdout).to_string()
                + &String::from_utf8_lossy(&out.stderr);
            // The first line, and further lines that are bare versions (pkg-config
            // --modversion of several packages); a banner's other lines are left out.
            text.lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .enumerate()
                .filter(|(i, l)| *i == 0 || l.starts_with(|c: char| c.is_ascii_digit()))
                .map(|(_, l)| l)
                .take(6)
                .collect::<Vec<_>>()
                .join("; ")
                .chars()
                .take(200)
                .collect()
        }
        Ok(out) => format!("`{}` failed ({})", argv.join(" "), out.status),
        Err(e) => format!("`{}` could not run: {e}", argv.join(" ")),
    }
}

/// Checks the tools, runs the build in the folder (its output goes to this process's stderr),
/// then asks the built command for `capabilities`.
pub fn build(peer: &PeerFolder, log: &mut dyn FnMut(&str)) -> BuildResult {
    let started = Instant::now();
    let id = peer.toml.id.clone();
    let mut toolchain = Vec::new();
    let mut missing = Vec::new();
    for req in &peer.toml.requires {
        if on_path(&req.tool) {
            let version = version_of(&req.version);
            log(&format!("peer {id}: {} {version}", req.tool));
            toolchain.push((req.tool.clone(), version));
        } else {
            missing.push(format!("{} (install: {})", req.tool, req.install));
        }
    }
    let result = |failure: Option<String>, toolchain| BuildResult {
        id: id.clone(),
        toolchain,
        failure,
        elapsed: started.elapsed(),
    };
    if !missing.is_empty() {
        return result(
            Some(format!("missing on PATH: {}", missing.join("; "))),
            toolchain,
        );
    }
    log(&format!(
        "peer {id}: running `{}` in {}",
        peer.toml.build.join(" "),
        peer.dir.display()
    ));
    let (program, args) = peer
        .toml
        .build
        .split_first()
        .map(|(p, a)| (p.clone(), a.to_vec()))
        .unwrap_or_default();
    let status = Command::new(&program)
        .args(&args)
        .current_dir(&peer.dir)
        .stdout(std::process::Stdio::from(std::io::stderr()))
        .status();
    match status {
        Ok(s) if s.success() => {}
        Ok(s) => {
            return result(
                Some(format!(
                    "`{}` in {} failed ({}); its output is above",
                    peer.toml.build.join(" "),
                    peer.dir.display(),
                    crate::process::describe_exit(s)
                )),
                toolchain,
            );
        }
        Err(e) => {
            return result(
                Some(format!(
                    "`{}` in {} could not start: {e}",
                    peer.toml.build.join(" "),
                    peer.dir.display()
                )),
                toolchain,
            );
        }
    }
    let command = peer.toml.command_in(&peer.dir);
    let failure = capabilities::query(&id, &command, Duration::from_secs(20))
        .err()
        .map(|e| format!("built, but {e}"));
    result(failure, toolchain)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn folder(root: &Path, id: &str, body: &str) {
        let dir = root.join(id);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(PEER_TOML), body).unwrap();
    }

    #[test]
    fn a_missing_tool_is_named_with_its_install_text_and_a_failing_build_fails() {
        let root = tempfile::tempdir().unwrap();
        folder(
            root.path(),
            "a",
            "id = \"a\"\nlanguage = \"x\"\ncommand = [\"bin/p\"]\nbuild = [\"sh\", \"-c\", \"exit 3\"]\n[[requires]]\ntool = \"no-such-tool-rpcarena\"\ninstall = \"apt-get install no-such\"\n",
        );
        folder(
            root.path(),
            "b",
            "id = \"b\"\nlanguage = \"x\"\ncommand = [\"bin/p\"]\nbuild = [\"sh\", \"-c\", \"exit 3\"]\n[[requires]]\ntool = \"sh\"\nversion = [\"echo\", \"sh 1.0\"]\ninstall = \"-\"\n",
        );
        let peers = list(root.path()).unwrap();
        assert_eq!(peers.len(), 2);
        let a = build(&peers[0], &mut |_| {});
        let text = a.failure.unwrap();
        assert!(
            text.contains(
                "missing on PATH: no-such-tool-rpcarena (install: apt-get install no-such)"
            ),
            "{text}"
        );
        let b = build(&peers[1], &mut |_| {});
        assert_eq!(b.toolchain, vec![("sh".to_string(), "sh 1.0".to_string())]);
        assert!(b.failure.unwrap().contains("failed (exit status 3)"));
    }
}
