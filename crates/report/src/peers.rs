//! The report's peer set-up: who ran, built how, from which files, and, per stack, the transport
//! settings each peer declares (protocol revision 1.1) side by side, so a reader sees where two
//! stacks are not configured alike, and what each peer says it could not match.

use rpcarena_model::campaign::Campaign;
use rpcarena_model::record::{Manifest, PeerInfo};
use rpcarena_protocol::event::{Role, Setting, StackCapability};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

fn short(hash: &str) -> &str {
    &hash[..hash.len().min(12)]
}

/// The peer table, each peer's build, and one settings table per stack the run used.
pub(crate) fn write(out: &mut String, m: &Manifest, campaign: Option<&Campaign>) {
    let _ = writeln!(
        out,
        "\n| Peer | Language | Version | Protocol | Executable SHA-256 | Declared files | Libraries |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|---|");
    for p in &m.peers {
        let caps = &p.capabilities;
        let mut libraries: Vec<String> = caps
            .roles
            .client
            .iter()
            .chain(&caps.roles.server)
            .flat_map(|s| s.libraries.iter().map(|(k, v)| format!("{k} {v}")))
            .collect();
        libraries.sort();
        libraries.dedup();
        let files: Vec<String> = p
            .files
            .iter()
            .map(|(path, hash)| match hash.strip_prefix("unreadable: ") {
                Some(why) => format!("{path} (unreadable: {why})"),
                None => format!("{path} `{}`", short(hash)),
            })
            .collect();
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | `{}` | {} | {} |",
            p.id,
            caps.language,
            caps.version,
            caps.revision.as_deref().unwrap_or("1.0"),
            short(&p.sha256),
            if files.is_empty() {
                "none declared".to_string()
            } else {
                files.join("<br>")
            },
            libraries.join(", ")
        );
    }
    out.push('\n');
    for p in m.peers.iter().filter(|p| !p.capabilities.build.is_empty()) {
        let build: Vec<String> = p
            .capabilities
            .build
            .iter()
            .map(|(k, v)| format!("{k} `{v}`"))
            .collect();
        let _ = writeln!(out, "- Build of {}: {}.", p.id, build.join(", "));
    }
    for stack in stacks(m, campaign) {
        write_stack(out, m, &stack, campaign);
    }
    out.push('\n');
}

/// The stacks of the campaign's cells (every stack a peer offers when the campaign is absent).
fn stacks(m: &Manifest, campaign: Option<&Campaign>) -> BTreeSet<String> {
    match campaign {
        Some(c) => c.cells.iter().map(|c| c.stack.clone()).collect(),
        None => m
            .peers
            .iter()
            .flat_map(|p| {
                let roles = &p.capabilities.roles;
                roles.client.iter().chain(&roles.server)
            })
            .map(|s| s.stack.clone())
            .collect(),
    }
}

/// The (peer, role) pairs that ran `stack`: from the cells, or every offer.
fn columns<'a>(
    m: &'a Manifest,
    stack: &str,
    campaign: Option<&Campaign>,
) -> Vec<(&'a PeerInfo, Role, &'a StackCapability)> {
    let mut used = BTreeSet::new();
    if let Some(c) = campaign {
        for cell in c.cells.iter().filter(|c| c.stack == stack) {
            used.insert((cell.client.clone(), Role::Client));
            used.insert((cell.server.clone(), Role::Server));
        }
    }
    let mut out = Vec::new();
    for p in &m.peers {
        for role in [Role::Client, Role::Server] {
            if campaign.is_some() && !used.contains(&(p.id.clone(), role)) {
                continue;
            }
            if let Some(cap) = p.capabilities.roles.stack(role, stack) {
                out.push((p, role, cap));
            }
        }
    }
    out
}

fn show(setting: &Setting) -> String {
    match setting {
        Setting::Flag(b) => b.to_string(),
        Setting::Number(n) => n.to_string(),
        Setting::Text(t) => t.replace('|', "\\|"),
        Setting::List(items) => items.join(", "),
    }
}

fn write_stack(out: &mut String, m: &Manifest, stack: &str, campaign: Option<&Campaign>) {
    let columns = columns(m, stack, campaign);
    let keys: BTreeSet<&String> = columns
        .iter()
        .flat_map(|(_, _, cap)| cap.settings.keys())
        .collect();
    let _ = writeln!(out, "\nDeclared settings of stack `{stack}`:\n");
    if keys.is_empty() {
        let _ = writeln!(
            out,
            "- no peer declares its settings (protocol 1.0 peers): whether they are configured alike is not known."
        );
    } else {
        let header: Vec<String> = columns
            .iter()
            .map(|(p, role, _)| format!("{} {role}", p.id))
            .collect();
        let _ = writeln!(out, "| setting | {} | alike |", header.join(" | "));
        let _ = writeln!(out, "|---|{}---|", "---|".repeat(columns.len()));
        for key in keys {
            let values: Vec<String> = columns
                .iter()
                .map(|(_, _, cap)| cap.settings.get(key).map_or("(not declared)".into(), show))
                .collect();
            let distinct: BTreeSet<&String> = values.iter().collect();
            let _ = writeln!(
                out,
                "| {key} | {} | {} |",
                values.join(" | "),
                if distinct.len() == 1 { "yes" } else { "**no**" }
            );
        }
    }
    let mut deviations: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (p, role, cap) in &columns {
        let said = match &cap.deviations {
            None => vec!["does not say (protocol 1.0)".to_string()],
            Some(list) => list.clone(),
        };
        if !said.is_empty() {
            deviations.insert(format!("{} {role}", p.id), said);
        }
    }
    if deviations.is_empty() {
        let _ = writeln!(
            out,
            "\nNo peer declares a deviation from docs/stacks.md on `{stack}`."
        );
    } else {
        let _ = writeln!(out, "\nDeviations from docs/stacks.md on `{stack}`:\n");
        for (who, list) in deviations {
            for d in list {
                let _ = writeln!(out, "- {who}: {d}");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rpcarena_protocol::event::{Capabilities, Roles};

    fn peer(id: &str, window: u64, deviations: Option<Vec<String>>) -> PeerInfo {
        let cap = StackCapability {
            stack: "grpc".into(),
            shapes: vec!["unary".into()],
            libraries: BTreeMap::from([("grpc".into(), "1.0".into())]),
            settings: BTreeMap::from([
                ("stream_window".to_string(), Setting::from(window)),
                (
                    "tls_versions".to_string(),
                    Setting::from(vec!["1.3".to_string()]),
                ),
            ]),
            deviations,
            ..StackCapability::default()
        };
        PeerInfo {
            id: id.into(),
            command: vec![format!("/bin/{id}")],
            sha256: "ab".repeat(32),
            files: BTreeMap::from([(format!("/opt/{id}"), "cd".repeat(32))]),
            capabilities: Capabilities {
                peer: id.into(),
                language: id.into(),
                version: "1".into(),
                revision: Some("1.1".into()),
                build: BTreeMap::from([("toolchain".into(), format!("{id}c 1.0"))]),
                roles: Roles {
                    client: vec![cap.clone()],
                    server: vec![cap],
                },
                ..Capabilities::default()
            },
        }
    }

    #[test]
    fn settings_are_side_by_side_and_differences_marked() {
        let m = Manifest {
            peers: vec![
                peer("rust", 16_777_216, Some(vec![])),
                peer(
                    "js",
                    65_535,
                    Some(vec![
                        "HTTP/2 stream window: 16777216 required, 65535 used".into(),
                    ]),
                ),
            ],
            ..Manifest::default()
        };
        let mut out = String::new();
        write(&mut out, &m, None);
        for part in [
            "| rust | rust | 1 | 1.1 | `abababababab` | /opt/rust `cdcdcdcdcdcd` | grpc 1.0 |",
            "- Build of js: toolchain `jsc 1.0`.",
            "| setting | rust client | rust server | js client | js server | alike |",
            "| stream_window | 16777216 | 16777216 | 65535 | 65535 | **no** |",
            "| tls_versions | 1.3 | 1.3 | 1.3 | 1.3 | yes |",
            "- js client: HTTP/2 stream window: 16777216 required, 65535 used",
        ] {
            assert!(out.contains(part), "{part} missing in\n{out}");
        }
        assert!(!out.contains("- rust client:"), "{out}");
    }
}
