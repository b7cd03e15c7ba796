//! `zmq` (revision 1.3): libzmq's ROUTER sockets on both ends over TCP, with a request endpoint
//! (`unary`: `[id][Request]` answered by `[id][Status][Response]`) and a command endpoint
//! (`send`: `[id][Request]`, no reply), exactly as docs/stacks.md "zmq" maps them; plaintext only.
//!
//! Binding: the `zmq` crate 0.10.0 (rust-zmq, last release 2023, little maintenance), whose
//! zmq-sys builds a bundled libzmq 4.3.4 (zeromq-src) with `cc`, so a plain `cargo build` needs
//! no system libzmq. The pure-Rust `zeromq` crate (0.7) was not taken: it needs a newer Rust and
//! has no ROUTER_MANDATORY, high-water marks or linger, which the contract requires. The crate
//! has no ZMQ_CONNECT_ROUTING_ID, so the client learns that its connection is up by the hello
//! retried while `zmq_send` fails with EHOSTUNREACH, as the contract says.
//!
//! Client: one thread owns both sockets and runs a `zmq::poll` loop ([`super::zmq_client`]); the
//! engine's lanes hand it their operations over a channel (woken through a socket pair the loop
//! polls beside the zmq sockets) and wait for the result, so every `zmq_send` and `zmq_recv` of
//! the client is on that one thread, whose CPU time is `submit_cpu_ns`. Server:
//! [`super::zmq_server`].

use rpcarena_protocol::event::Setting;
use std::net::IpAddr;

/// `ZMQ_SNDHWM` and `ZMQ_RCVHWM` of every socket, both ends (libzmq's default, set explicitly).
pub const HWM: i32 = 1000;
/// `ZMQ_LINGER` of every socket: closing never waits for unsent messages.
pub const LINGER_MS: i32 = 0;
/// `ZMQ_ROUTER_MANDATORY` on every socket: a message for an unknown or full peer fails instead
/// of vanishing.
pub const ROUTER_MANDATORY: bool = true;
/// I/O threads per context (libzmq's default).
pub const IO_THREADS: i32 = 1;
/// The client's runtime as `capabilities` declares it: the load model's lanes on tokio, every
/// socket call on one thread.
pub const RUNTIME: &str = "one zmq_poll thread for the sockets (submit_cpu_ns), lanes on tokio";
/// Connections per client: the request socket and the command socket.
pub const CONNECTIONS: u32 = 2;

/// The options every socket gets before bind or connect.
pub fn configure(socket: &zmq::Socket) -> zmq::Result<()> {
    socket.set_router_mandatory(ROUTER_MANDATORY)?;
    socket.set_sndhwm(HWM)?;
    socket.set_rcvhwm(HWM)?;
    socket.set_linger(LINGER_MS)?;
    Ok(())
}

/// `tcp://HOST:PORT` for an address (IPv6 in brackets); `port` may be `*` (any free port).
pub fn endpoint_url(ip: IpAddr, port: &str) -> String {
    match ip {
        IpAddr::V4(v4) => format!("tcp://{v4}:{port}"),
        IpAddr::V6(v6) => format!("tcp://[{v6}]:{port}"),
    }
}

/// A context with [`IO_THREADS`] and IPv6 on its sockets where the address needs it.
pub fn context() -> zmq::Context {
    let context = zmq::Context::new();
    if let Err(e) = context.set_io_threads(IO_THREADS) {
        eprintln!("rpcarena-peer-rust: cannot set the zmq I/O threads: {e}");
    }
    context
}

/// libzmq's version, as `zmq::version()` reports the library linked in.
pub fn libzmq_version() -> String {
    let (major, minor, patch) = zmq::version();
    format!("{major}.{minor}.{patch}")
}

/// The stack's settings as `capabilities` declares them (docs/stacks.md, "zmq").
pub fn declared() -> Vec<(&'static str, Setting)> {
    vec![
        ("sndhwm", u64::from(HWM.unsigned_abs()).into()),
        ("rcvhwm", u64::from(HWM.unsigned_abs()).into()),
        ("router_mandatory", ROUTER_MANDATORY.into()),
        ("linger_ms", u64::from(LINGER_MS.unsigned_abs()).into()),
        ("io_threads", u64::from(IO_THREADS.unsigned_abs()).into()),
        ("tcp_nodelay", true.into()),
        ("congestion_control", "host default".into()),
        ("connections", u64::from(CONNECTIONS).into()),
        ("max_message_bytes", (super::MAX_MESSAGE as u64).into()),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_and_the_linked_libzmq() {
        assert_eq!(
            endpoint_url("127.0.0.1".parse().unwrap(), "5555"),
            "tcp://127.0.0.1:5555"
        );
        assert_eq!(endpoint_url("::1".parse().unwrap(), "*"), "tcp://[::1]:*");
        assert!(libzmq_version().starts_with("4.3."), "{}", libzmq_version());
    }
}
