//! The `capabilities` event: every stack in both roles, every shape, every load model (client),
//! both payload kinds, and the versions of the libraries behind each stack (read from Cargo.lock
//! by build.rs).

use crate::args::Stack;
use rpcarena_protocol::event::{Capabilities, Event, Roles, StackCapability};
use rpcarena_protocol::workload::{Payload, Shape};
use std::collections::BTreeMap;

/// Load models this peer runs as a client: every one of docs/peer-protocol.md.
pub const LOAD_MODELS: &[&str] = &rpcarena_protocol::event::load::ALL;

/// (library, version) pairs that implement `stack`.
pub fn libraries(stack: Stack) -> Vec<(&'static str, &'static str)> {
    let common = [
        ("rustls", env!("RPCARENA_LIB_RUSTLS")),
        ("ring", env!("RPCARENA_LIB_RING")),
        ("prost", env!("RPCARENA_LIB_PROST")),
        ("tokio", env!("RPCARENA_LIB_TOKIO")),
    ];
    let own: &[(&str, &str)] = match stack {
        Stack::Grpc => &[
            ("tonic", env!("RPCARENA_LIB_TONIC")),
            ("hyper", env!("RPCARENA_LIB_HYPER")),
            ("h2", env!("RPCARENA_LIB_H2")),
            ("tokio-rustls", env!("RPCARENA_LIB_TOKIO_RUSTLS")),
        ],
        Stack::Quic => &[
            ("quinn", env!("RPCARENA_LIB_QUINN")),
            ("quinn-proto", env!("RPCARENA_LIB_QUINN_PROTO")),
        ],
        Stack::Tcp => &[("tokio-rustls", env!("RPCARENA_LIB_TOKIO_RUSTLS"))],
    };
    own.iter().copied().chain(common).collect()
}

/// The event this peer answers `capabilities` with.
pub fn event() -> Event {
    let shapes: Vec<String> = Shape::ALL.iter().map(|s| s.as_str().to_string()).collect();
    let entry = |stack: Stack, load_models: Vec<String>| StackCapability {
        stack: stack.as_str().to_string(),
        shapes: shapes.clone(),
        load_models,
        payloads: Payload::ALL
            .iter()
            .map(|p| p.as_str().to_string())
            .collect(),
        libraries: libraries(stack)
            .into_iter()
            .map(|(name, version)| (name.to_string(), version.to_string()))
            .collect::<BTreeMap<_, _>>(),
    };
    let models: Vec<String> = LOAD_MODELS.iter().map(|m| m.to_string()).collect();
    Event::Capabilities(Capabilities {
        peer: "rpcarena-peer-rust".to_string(),
        language: "rust".to_string(),
        version: env!("CARGO_PKG_VERSION").to_string(),
        roles: Roles {
            client: Stack::ALL
                .iter()
                .map(|s| entry(*s, models.clone()))
                .collect(),
            server: Stack::ALL.iter().map(|s| entry(*s, Vec::new())).collect(),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rpcarena_protocol::event::{Role, parse_event};

    #[test]
    fn every_stack_is_offered_in_both_roles_with_every_shape() {
        let Ok(Event::Capabilities(caps)) = parse_event(&event().to_line()) else {
            panic!("capabilities must round-trip");
        };
        for role in [Role::Client, Role::Server] {
            for stack in Stack::ALL {
                let offered = caps.roles.stack(role, stack.as_str()).expect("offered");
                assert_eq!(offered.shapes.len(), 4);
                assert_eq!(offered.load_models.is_empty(), role == Role::Server);
                assert!(offered.libraries.contains_key("rustls"));
            }
        }
        let grpc = caps.roles.stack(Role::Client, "grpc").expect("offered");
        assert!(grpc.libraries["tonic"].starts_with("0.14."), "{grpc:?}");
        let quic = caps.roles.stack(Role::Server, "quic").expect("offered");
        assert!(quic.libraries["quinn"].starts_with("0.11."), "{quic:?}");
    }

    #[test]
    fn versions_match_the_lockfile() {
        let lock =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../Cargo.lock"))
                .expect("the workspace lockfile is readable");
        for stack in Stack::ALL {
            for (name, version) in libraries(stack) {
                let entry = format!("name = \"{name}\"\nversion = \"{version}\"");
                assert!(
                    lock.contains(&entry),
                    "{name} {version} is not in Cargo.lock"
                );
            }
        }
    }
}
