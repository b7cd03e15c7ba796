//! The `capabilities` event (revision 1.2): every stack in both roles, every shape (pingpong
//! included), every load model (client), both payload kinds, the conformance fault modes of every
//! stack in both roles (crate::fault), the allocation counters (crate::allocations), the
//! versions of the libraries behind each stack (read from Cargo.lock by build.rs), how the binary
//! was built, the file it runs from, and each stack's transport settings (docs/stacks.md,
//! "Settings every peer declares"), taken from the constants the stacks are configured with. The
//! Rust peer is the reference, so it has no deviations.
//!
//! Two settings are what the kernel grants this process, so they are asked for on sockets that
//! are never bound or connected (no packet is sent): the TCP congestion controller and the UDP
//! socket buffers.

use crate::allocations;
use crate::args::{Stack, TlsMode};
use crate::stacks::{self, grpc, quic, tcp};
use crate::tls;
use rpcarena_protocol::event::{Capabilities, Event, Roles, Setting, StackCapability};
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
        Stack::Zmq => {
            return vec![
                ("zmq", env!("RPCARENA_LIB_ZMQ")),
                ("zmq-sys", env!("RPCARENA_LIB_ZMQ_SYS")),
                ("libzmq", libzmq()),
                ("prost", env!("RPCARENA_LIB_PROST")),
            ];
        }
    };
    own.iter().copied().chain(common).collect()
}

/// The version of the libzmq linked in (zmq-sys's bundled build), as `zmq::version()` says.
fn libzmq() -> &'static str {
    static VERSION: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    VERSION.get_or_init(stacks::zmq::libzmq_version)
}

/// The revision of docs/peer-protocol.md this peer follows.
pub const REVISION: &str = "1.5";

/// How this binary was built (recorded by build.rs) and what runs it.
pub fn build() -> BTreeMap<String, String> {
    [
        ("toolchain", env!("RPCARENA_BUILD_TOOLCHAIN")),
        ("profile", env!("RPCARENA_BUILD_PROFILE")),
        ("opt_level", env!("RPCARENA_BUILD_OPT_LEVEL")),
        ("debug", env!("RPCARENA_BUILD_DEBUG")),
        ("target", env!("RPCARENA_BUILD_TARGET")),
        ("rustflags", env!("RPCARENA_BUILD_RUSTFLAGS")),
    ]
    .into_iter()
    .map(|(key, value)| (key.to_string(), value.to_string()))
    .collect()
}

/// The files this peer runs from: its own executable (statically linked Rust and libzmq, nothing
/// else but the C library and libstdc++ that the bundled libzmq needs, system libraries that
/// `build.target` names).
pub fn files() -> Vec<String> {
    match std::env::current_exe() {
        Ok(path) => vec![path.display().to_string()],
        Err(e) => {
            eprintln!("rpcarena-peer-rust: cannot find the running executable: {e}");
            Vec::new()
        }
    }
}

/// The transport settings of `stack` (the same in both roles): TLS, the stack's own, and what
/// every stack shares. `tcp_congestion` is the kernel's answer, asked once.
pub fn settings(stack: Stack, tcp_congestion: &str) -> BTreeMap<String, Setting> {
    let own = match stack {
        Stack::Grpc => grpc::declared(),
        Stack::Quic => quic::declared(),
        Stack::Tcp => tcp::declared(),
        Stack::Zmq => {
            // plaintext only: no TLS settings, no ALPN; libzmq's TCP sockets get the host's
            // congestion control
            let shared = [
                ("compression", stacks::COMPRESSION.into()),
                ("runtime", stacks::zmq::RUNTIME.into()),
            ];
            return stacks::zmq::declared()
                .into_iter()
                .chain(shared)
                .map(|(key, value)| (key.to_string(), value))
                .collect();
        }
    };
    let alpn = String::from_utf8_lossy(tls::alpn(stack)).into_owned();
    let mut shared = vec![
        ("alpn", Setting::from(alpn)),
        ("compression", stacks::COMPRESSION.into()),
        ("runtime", stacks::runtime_description().into()),
    ];
    if stack != Stack::Quic {
        shared.push(("congestion_control", tcp_congestion.into()));
    }
    tls::declared()
        .into_iter()
        .chain(own)
        .chain(shared)
        .map(|(key, value)| (key.to_string(), value))
        .collect()
}

/// The shapes `stack` carries: grpc every one (`send` is the `Command` RPC); the native framing
/// of quic and tcp every one but `send`.
pub fn shapes(stack: Stack) -> Vec<Shape> {
    Shape::EVERY
        .into_iter()
        .filter(|shape| !not_offered(stack).iter().any(|(s, _)| s == shape))
        .collect()
}

/// The shapes `stack` cannot carry, and why (revision 1.3, `not_offered`).
pub fn not_offered(stack: Stack) -> Vec<(Shape, &'static str)> {
    const NO_STREAMS: &str = "the zmq mapping (docs/stacks.md) has one request with one reply \
        and one-way commands; streams are not offered";
    match stack {
        Stack::Grpc => Vec::new(),
        Stack::Zmq => [
            Shape::ClientStream,
            Shape::ServerStream,
            Shape::Bidi,
            Shape::Pingpong,
        ]
        .into_iter()
        .map(|shape| (shape, NO_STREAMS))
        .collect(),
        Stack::Quic | Stack::Tcp => vec![(
            Shape::Send,
            "the native framing answers every request with a STATUS frame; a one-way command \
             would need a frame type it does not have",
        )],
    }
}

/// The `--tls` values `stack` takes (revision 1.3): quic only `on` (QUIC has TLS inside), the
/// TCP stacks both.
pub fn tls_modes(stack: Stack) -> Vec<String> {
    let modes: &[TlsMode] = match stack {
        Stack::Quic => &[TlsMode::On],
        Stack::Zmq => &[TlsMode::Off],
        Stack::Grpc | Stack::Tcp => &[TlsMode::On, TlsMode::Off],
    };
    modes.iter().map(|m| m.as_str().to_string()).collect()
}

/// The event this peer answers `capabilities` with.
pub fn event() -> Event {
    let tcp_congestion = stacks::tcp_congestion_in_use();
    // Every shape: each server's bidi handler answers every request as it arrives, so it serves
    // pingpong too (crate::stacks).
    let entry = |stack: Stack, load_models: Vec<String>| StackCapability {
        stack: stack.as_str().to_string(),
        // every stack runs crate::fault's modes in both roles
        conformance_faults: true,
        shapes: shapes(stack)
            .iter()
            .map(|s| s.as_str().to_string())
            .collect(),
        load_models,
        payloads: Payload::PROTOBUF
            .iter()
            .map(|p| p.as_str().to_string())
            .collect(),
        libraries: libraries(stack)
            .into_iter()
            .map(|(name, version)| (name.to_string(), version.to_string()))
            .collect::<BTreeMap<_, _>>(),
        settings: settings(stack, &tcp_congestion),
        deviations: Some(Vec::new()),
        tls: tls_modes(stack),
        not_offered: not_offered(stack)
            .into_iter()
            .map(|(shape, why)| (shape.as_str().to_string(), why.to_string()))
            .collect(),
        // official only, the default (1.4): no stack here has a replay client
        client_modes: Vec::new(),
    };
    let models: Vec<String> = LOAD_MODELS.iter().map(|m| m.to_string()).collect();
    Event::Capabilities(Capabilities {
        peer: "rpcarena-peer-rust".to_string(),
        language: "rust".to_string(),
        version: env!("CARGO_PKG_VERSION").to_string(),
        revision: Some(REVISION.to_string()),
        build: build(),
        files: files(),
        allocations: Some(allocations::declared()),
        // 1.5: native code, profiled from outside by `rpcarena profile` with Linux perf
        profiler: Some("perf".to_string()),
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
                assert!(offered.conformance_faults, "{role} {stack:?}");
                assert_eq!(offered.load_models.is_empty(), role == Role::Server);
                // every shape is offered or said not to be, with a reason
                assert_eq!(
                    offered.shapes.len() + offered.not_offered.len(),
                    Shape::EVERY.len(),
                    "{offered:?}"
                );
                if stack == Stack::Zmq {
                    assert_eq!(offered.shapes, ["unary", "send"]);
                    assert_eq!(offered.tls, ["off"]);
                    assert!(offered.libraries["libzmq"].starts_with("4.3."));
                    continue;
                }
                let every: Vec<&str> = Shape::EVERY
                    .iter()
                    .filter(|s| stack == Stack::Grpc || !s.is_one_way())
                    .map(Shape::as_str)
                    .collect();
                assert_eq!(offered.shapes, every);
                assert_eq!(
                    offered.not_offered.contains_key("send"),
                    stack != Stack::Grpc,
                    "{offered:?}"
                );
                assert!(offered.libraries.contains_key("rustls"));
            }
        }
        let grpc = caps.roles.stack(Role::Client, "grpc").expect("offered");
        assert!(grpc.libraries["tonic"].starts_with("0.14."), "{grpc:?}");
        assert!(grpc.takes_tls(true) && grpc.takes_tls(false), "{grpc:?}");
        let tcp = caps.roles.stack(Role::Server, "tcp").expect("offered");
        assert!(tcp.takes_tls(false), "{tcp:?}");
        let quic = caps.roles.stack(Role::Server, "quic").expect("offered");
        assert!(quic.libraries["quinn"].starts_with("0.11."), "{quic:?}");
        assert!(quic.takes_tls(true) && !quic.takes_tls(false), "{quic:?}");
    }

    /// The keys docs/stacks.md says every peer declares, where they apply to the stack.
    const REQUIRED: &[&str] = &[
        "tls_versions",
        "tls_groups",
        "tls_ciphers",
        "tls_resumption",
        "alpn",
        "max_message_bytes",
        "connections",
        "compression",
        "runtime",
    ];

    #[test]
    fn revision_1_1_and_1_2_fields_are_declared() {
        let line = event().to_line();
        assert!(line.contains(r#""conformance_faults":true"#), "{line}");
        let Ok(Event::Capabilities(caps)) = parse_event(&line) else {
            panic!("capabilities must round-trip");
        };
        assert_eq!(caps.revision.as_deref(), Some("1.5"));
        assert_eq!(caps.profiler.as_deref(), Some("perf"));
        let counted = caps.allocations.as_ref().expect("allocations declared");
        assert!(counted.counts && counted.bytes, "{counted:?}");
        assert!(counted.source.contains("allocator"), "{counted:?}");
        assert!(
            caps.build["toolchain"].starts_with("rustc "),
            "{:?}",
            caps.build
        );
        assert!(!caps.build["opt_level"].is_empty());
        let exe = std::env::current_exe().unwrap();
        assert_eq!(caps.files, vec![exe.display().to_string()]);
        assert!(std::path::Path::new(&caps.files[0]).is_absolute());
        for role in [Role::Client, Role::Server] {
            for stack in Stack::ALL {
                let entry = caps.roles.stack(role, stack.as_str()).expect("offered");
                assert_eq!(entry.deviations, Some(vec![]));
                if stack == Stack::Zmq {
                    // plaintext only: no TLS settings, no ALPN
                    for key in [
                        "sndhwm",
                        "rcvhwm",
                        "router_mandatory",
                        "linger_ms",
                        "io_threads",
                    ] {
                        assert!(entry.settings.contains_key(key), "zmq: {key}");
                    }
                    assert_eq!(
                        entry.settings["congestion_control"],
                        Setting::from("host default")
                    );
                    continue;
                }
                for key in REQUIRED {
                    assert!(entry.settings.contains_key(*key), "{stack:?}: {key}");
                }
            }
        }
        let number =
            |stack: &str, key: &str| match &caps.roles.stack(Role::Server, stack).unwrap().settings
                [key]
            {
                Setting::Number(n) => n.as_u64().unwrap(),
                other => panic!("{stack} {key}: {other:?}"),
            };
        assert_eq!(number("grpc", "stream_window"), 16 * 1024 * 1024);
        assert_eq!(number("quic", "send_window"), 16 * 1024 * 1024);
        assert_eq!(number("quic", "max_concurrent_streams"), 10_000);
        assert_eq!(number("quic", "idle_timeout_ms"), 30_000);
        assert_eq!(number("tcp", "max_message_bytes"), 16 * 1024 * 1024 + 1024);
        let grpc = &caps.roles.stack(Role::Client, "grpc").unwrap().settings;
        assert_eq!(grpc["alpn"], Setting::from("h2"));
        assert_eq!(grpc["bdp_probing"], Setting::from(false));
        assert_eq!(grpc["tcp_nodelay"], Setting::from(true));
        let quic = &caps.roles.stack(Role::Client, "quic").unwrap().settings;
        assert_eq!(quic["alpn"], Setting::from("rpcarena/1"));
        assert_eq!(quic["congestion_control"], Setting::from("cubic"));
        assert!(!quic.contains_key("tcp_nodelay"));
        let tcp = &caps.roles.stack(Role::Client, "tcp").unwrap().settings;
        assert_eq!(tcp["connections"], Setting::from("1 per lane"));
        assert!(!tcp.contains_key("stream_window"));
        let Setting::Text(runtime) = &tcp["runtime"] else {
            panic!("runtime is text");
        };
        assert!(runtime.starts_with("tokio multi-thread, "), "{runtime}");
    }

    #[test]
    fn versions_match_the_lockfile() {
        let lock =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../Cargo.lock"))
                .expect("the workspace lockfile is readable");
        for stack in Stack::ALL {
            for (name, version) in libraries(stack) {
                if name == "libzmq" {
                    // the C library zmq-sys builds, not a crate
                    continue;
                }
                let entry = format!("name = \"{name}\"\nversion = \"{version}\"");
                assert!(
                    lock.contains(&entry),
                    "{name} {version} is not in Cargo.lock"
                );
            }
        }
    }
}
