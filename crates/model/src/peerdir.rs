//! `peers/<language>/peer.toml`: how a peer in another language is found, built and started
//! (docs/peer-protocol.md, "Peers in campaigns"). Pure: parsing and the paths it implies; the
//! runner finds the folder, checks the tools and runs the build.

use serde::Deserialize;
use std::path::{Path, PathBuf};

/// The file every peer folder holds.
pub const PEER_TOML: &str = "peer.toml";

/// The peer id that needs no folder: the Rust peer, built with the workspace.
pub const RUST: &str = "rust";
/// The Rust peer's executable, looked up next to `rpcarena`.
pub const RUST_EXECUTABLE: &str = "rpcarena-peer-rust";

/// One `peers/<language>/peer.toml`.
#[derive(Deserialize, Debug, Clone, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PeerToml {
    /// The folder's name; campaigns refer to the peer by it.
    pub id: String,
    /// The peer's language.
    pub language: String,
    /// Argument vector that starts the built peer; its first element is relative to the folder.
    pub command: Vec<String>,
    /// Argument vector that builds it, run in the folder.
    pub build: Vec<String>,
    /// Tools the build needs, checked before it runs.
    #[serde(default)]
    pub requires: Vec<Requirement>,
}

/// A tool a peer's build needs.
#[derive(Deserialize, Debug, Clone, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Requirement {
    /// The program looked up on PATH.
    pub tool: String,
    /// Argument vector that prints its version (recorded).
    #[serde(default)]
    pub version: Vec<String>,
    /// How to install it, shown when it is missing.
    pub install: String,
}

impl PeerToml {
    /// Parses `text` read from `path` (named in errors); the id must be the folder's name.
    pub fn parse(text: &str, path: &Path) -> Result<PeerToml, String> {
        let parsed: PeerToml =
            toml::from_str(text).map_err(|e| format!("{}: {e}", path.display()))?;
        let folder = path
            .parent()
            .and_then(Path::file_name)
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if !folder.is_empty() && parsed.id != folder {
            return Err(format!(
                "{}: id is {:?} but {folder:?} expected (the folder's name)",
                path.display(),
                parsed.id
            ));
        }
        if parsed.command.first().is_none_or(|c| c.trim().is_empty()) {
            return Err(format!(
                "{}: command: expected a non-empty argument vector, e.g. [\"bin/rpcarena-peer-go\"]",
                path.display()
            ));
        }
        if parsed.build.is_empty() {
            return Err(format!(
                "{}: build: expected a non-empty argument vector, e.g. [\"./build.sh\"]",
                path.display()
            ));
        }
        Ok(parsed)
    }

    /// The command with its first element made absolute against `folder` (a bare name without
    /// `/` stays a name looked up on PATH).
    pub fn command_in(&self, folder: &Path) -> Vec<String> {
        let mut command = self.command.clone();
        if let Some(first) = command.first_mut()
            && first.contains('/')
            && !first.starts_with('/')
        {
            *first = folder.join(&*first).display().to_string();
        }
        command
    }
}

/// The `peers/` folders to look in for a campaign in `campaign_dir`: `explicit` alone when
/// given, else `peers/` in `campaign_dir` and in each of its ancestors, nearest first.
pub fn search_roots(explicit: Option<&Path>, campaign_dir: &Path) -> Vec<PathBuf> {
    if let Some(dir) = explicit {
        return vec![dir.to_path_buf()];
    }
    campaign_dir.ancestors().map(|d| d.join("peers")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const GO: &str = r#"
id = "go"
language = "go"
command = ["bin/rpcarena-peer-go", "--quiet"]
build = ["./build.sh"]
[[requires]]
tool = "go"
version = ["go", "version"]
install = "apt-get install golang-go"
"#;

    #[test]
    fn parses_and_resolves_the_command_in_its_folder() {
        let peer = PeerToml::parse(GO, Path::new("/r/peers/go/peer.toml")).unwrap();
        assert_eq!(peer.requires[0].tool, "go");
        assert_eq!(
            peer.command_in(Path::new("/r/peers/go")),
            vec!["/r/peers/go/bin/rpcarena-peer-go", "--quiet"]
        );
    }

    #[test]
    fn refuses_a_wrong_id_or_empty_vectors() {
        let err = PeerToml::parse(GO, Path::new("/r/peers/golang/peer.toml")).unwrap_err();
        assert!(
            err.contains("id is \"go\" but \"golang\" expected"),
            "{err}"
        );
        let err = PeerToml::parse(
            &GO.replace(r#"["./build.sh"]"#, "[]"),
            Path::new("/r/peers/go/peer.toml"),
        )
        .unwrap_err();
        assert!(err.contains("build: expected a non-empty"), "{err}");
        let err = PeerToml::parse("id = 1", Path::new("/p/peer.toml")).unwrap_err();
        assert!(err.starts_with("/p/peer.toml: "), "{err}");
    }

    #[test]
    fn searches_the_campaigns_folder_and_its_ancestors() {
        let roots = search_roots(None, Path::new("/r/campaigns"));
        assert_eq!(roots[0], Path::new("/r/campaigns/peers"));
        assert_eq!(roots[1], Path::new("/r/peers"));
        assert_eq!(
            search_roots(Some(Path::new("/x")), Path::new("/r")),
            vec![PathBuf::from("/x")]
        );
    }
}
