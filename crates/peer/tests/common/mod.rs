//! What the integration tests share: a private CA and server certificate for 127.0.0.1, a peer
//! process driven over stdin/stdout with bounded waits, and a server started on loopback.

#![allow(dead_code)]

use rpcarena_protocol::event::{Armed, Event, SampleReport, parse_event};
use rpcarena_protocol::histogram;
use rpcarena_protocol::workload::Shape;
use std::fmt::Display;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::Duration;

pub const PEER: &str = env!("CARGO_BIN_EXE_rpcarena-peer-rust");
pub const EVENT_TIMEOUT: Duration = Duration::from_secs(30);

/// A CA, a server certificate for 127.0.0.1 signed by it, and a second, unrelated CA.
pub struct Pki {
    dir: tempfile::TempDir,
}

impl Pki {
    pub fn new() -> Pki {
        let dir = tempfile::tempdir().expect("temp dir");
        let (ca_cert, ca_key, ca_params) = new_ca("rpcarena test CA");
        let issuer = rcgen::Issuer::from_params(&ca_params, &ca_key);
        let server_key = rcgen::KeyPair::generate().expect("P-256 key");
        let mut params =
            rcgen::CertificateParams::new(vec!["127.0.0.1".to_string()]).expect("params");
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "rpcarena test server");
        let server_cert = params.signed_by(&server_key, &issuer).expect("signed");
        let (other_ca, _, _) = new_ca("some other CA");
        let write =
            |name: &str, text: String| std::fs::write(dir.path().join(name), text).expect("write");
        write("ca.pem", ca_cert.pem());
        write("server.pem", server_cert.pem());
        write("server.key", server_key.serialize_pem());
        write("other-ca.pem", other_ca.pem());
        Pki { dir }
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
}

fn new_ca(name: &str) -> (rcgen::Certificate, rcgen::KeyPair, rcgen::CertificateParams) {
    let key = rcgen::KeyPair::generate().expect("P-256 key");
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    params.key_usages = vec![
        rcgen::KeyUsagePurpose::KeyCertSign,
        rcgen::KeyUsagePurpose::CrlSign,
    ];
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, name);
    let cert = params.self_signed(&key).expect("self-signed");
    (cert, key, params)
}

/// A peer process: events from its stdout through a channel, commands to its stdin.
pub struct Peer {
    pub child: Child,
    stdin: Option<ChildStdin>,
    events: Receiver<String>,
    stderr: PathBuf,
}

impl Peer {
    pub fn spawn(args: &[String], stderr: &Path) -> Peer {
        let mut child = Command::new(PEER)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(stderr).expect("stderr file"))
            .spawn()
            .expect("the peer binary starts");
        let stdout = child.stdout.take().expect("piped");
        let (sender, events) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
        let stdin = child.stdin.take();
        Peer {
            child,
            stdin,
            events,
            stderr: stderr.to_path_buf(),
        }
    }

    pub fn next_event(&self) -> Event {
        match self.events.recv_timeout(EVENT_TIMEOUT) {
            Ok(line) => parse_event(&line).unwrap_or_else(|e| {
                panic!("not a v1 event: {line:?}: {e}\n{}", self.stderr_text())
            }),
            Err(RecvTimeoutError::Timeout) => {
                panic!("no event within {EVENT_TIMEOUT:?}\n{}", self.stderr_text())
            }
            Err(RecvTimeoutError::Disconnected) => {
                panic!("the peer closed stdout\n{}", self.stderr_text())
            }
        }
    }

    pub fn send(&mut self, command: &str) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        writeln!(stdin, "{command}").expect("the peer reads stdin");
        stdin.flush().expect("flush");
    }

    /// Closes stdin: end of stdin means SHUTDOWN.
    pub fn close_stdin(&mut self) {
        self.stdin.take();
    }

    /// Waits for the exit (bounded) and checks that nothing more was printed.
    pub fn exit_code(&mut self) -> i32 {
        self.stdin.take();
        for _ in 0..300 {
            if let Some(status) = self.child.try_wait().expect("wait") {
                if let Ok(extra) = self.events.recv_timeout(Duration::from_millis(100)) {
                    panic!("output after the last event: {extra}");
                }
                return status.code().expect("exited, not killed");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("the peer did not exit\n{}", self.stderr_text());
    }

    pub fn stderr_text(&self) -> String {
        format!(
            "--- peer stderr ---\n{}",
            std::fs::read_to_string(&self.stderr).unwrap_or_default()
        )
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|a| a.to_string()).collect()
}

/// A client's command line as the controller builds it: `--stack`, `--server`, `--server-name
/// 127.0.0.1` and `--ca` (a file of the [`Pki`]), then every option of `options` in order.
pub fn client_args(
    pki: &Pki,
    stack: &str,
    address: &str,
    ca: &str,
    options: &[(&str, &dyn Display)],
) -> Vec<String> {
    let mut args = strings(&["client", "--stack", stack, "--server", address]);
    args.extend(strings(&["--server-name", "127.0.0.1", "--ca"]));
    args.push(pki.path(ca).display().to_string());
    for (name, value) in options {
        args.push(name.to_string());
        args.push(value.to_string());
    }
    args
}

/// A server's command line: `--stack`, `--listen`, `--cert` and `--key`.
pub fn server_args(stack: &str, listen: &str, cert: &Path, key: &Path) -> Vec<String> {
    let mut args = strings(&["server", "--stack", stack, "--listen", listen]);
    args.extend(["--cert".to_string(), cert.display().to_string()]);
    args.extend(["--key".to_string(), key.display().to_string()]);
    args
}

/// Drives a client through its sample as the controller does: `armed`, START, `sample`. The
/// client then waits for SHUTDOWN ([`shut_down_client`]).
pub fn armed_then_sample(client: &mut Peer, label: &str) -> (Armed, SampleReport) {
    let Event::Armed(armed) = client.next_event() else {
        panic!("{label}: expected armed\n{}", client.stderr_text());
    };
    client.send("START");
    let Event::Sample(sample) = client.next_event() else {
        panic!("{label}: expected sample\n{}", client.stderr_text());
    };
    (armed, sample)
}

/// SHUTDOWN after the sample: the client answers `stopped` and exits 0.
pub fn shut_down_client(client: &mut Peer, context: &str) {
    client.send("SHUTDOWN");
    assert!(
        matches!(client.next_event(), Event::Stopped(_)),
        "{context}"
    );
    assert_eq!(client.exit_code(), 0, "{context}");
}

/// What every sample of a well-formed run holds: no failure, some completed operations, and
/// one latency value per completed operation. Returns the latency histogram.
pub fn assert_sound(sample: &SampleReport, context: &str) -> hdrhistogram::Histogram<u64> {
    assert_eq!(sample.failed, 0, "{context}");
    assert!(sample.completed > 0, "{context}");
    let latencies = histogram::decode(&sample.histogram).expect("valid histogram");
    assert_eq!(latencies.len(), sample.completed, "{context}");
    latencies
}

/// Messages and bytes per completed operation of `shape` with `messages` per stream and the
/// given request and response sizes.
pub fn assert_operation_counts(
    sample: &SampleReport,
    shape: Shape,
    messages: u64,
    (request_size, response_size): (u64, u64),
    context: &str,
) {
    let requests = shape.requests_per_op(messages as u32);
    let responses = shape.responses_per_op(messages as u32);
    // a command's acknowledgement (grpc's Empty) carries no payload
    let response_size = if shape.is_one_way() { 0 } else { response_size };
    assert_eq!(sample.requests, sample.completed * requests, "{context}");
    assert_eq!(sample.responses, sample.completed * responses, "{context}");
    assert_eq!(
        sample.request_bytes,
        sample.requests * request_size,
        "{context}"
    );
    assert_eq!(
        sample.response_bytes,
        sample.responses * response_size,
        "{context}"
    );
}

/// The shapes `stack` carries (revision 1.3): `send` on grpc and zmq, every other shape on
/// the native stacks, unary and send on zmq.
pub fn shapes(stack: &str) -> Vec<Shape> {
    if stack == "zmq" {
        return vec![Shape::Unary, Shape::Send];
    }
    Shape::EVERY
        .into_iter()
        .filter(|shape| stack == "grpc" || !shape.is_one_way())
        .collect()
}

/// A plaintext server (`--tls off`) of `stack` with `extra` arguments, and its address.
pub fn start_plain_server(pki: &Pki, stack: &str, extra: &[&str]) -> (Peer, String) {
    let mut args = strings(&[
        "server",
        "--stack",
        stack,
        "--listen",
        "127.0.0.1:0",
        "--tls",
        "off",
    ]);
    args.extend(strings(extra));
    let name = format!("{stack}-plain-{}-server.stderr", extra.join("-"));
    let server = Peer::spawn(&args, &pki.path(&name));
    let Event::Ready(ready) = server.next_event() else {
        panic!(
            "the server's first event must be ready\n{}",
            server.stderr_text()
        );
    };
    (server, ready.address)
}

/// A plaintext client's command line: `--stack`, `--server`, `--tls off`, then `options`.
pub fn plain_client_args(
    stack: &str,
    address: &str,
    options: &[(&str, &dyn Display)],
) -> Vec<String> {
    let mut args = strings(&[
        "client", "--stack", stack, "--server", address, "--tls", "off",
    ]);
    for (name, value) in options {
        args.push(name.to_string());
        args.push(value.to_string());
    }
    args
}

pub fn start_server(pki: &Pki, stack: &str) -> (Peer, String) {
    start_server_with(pki, stack, &[])
}

/// A server of `stack` with `extra` arguments (e.g. the diagnostic stall), and its address.
pub fn start_server_with(pki: &Pki, stack: &str, extra: &[&str]) -> (Peer, String) {
    let (cert, key) = (pki.path("server.pem"), pki.path("server.key"));
    let mut args = server_args(stack, "127.0.0.1:0", &cert, &key);
    args.extend(strings(extra));
    let server = Peer::spawn(&args, &pki.path(&format!("{stack}-server.stderr")));
    let Event::Ready(ready) = server.next_event() else {
        panic!(
            "the server's first event must be ready\n{}",
            server.stderr_text()
        );
    };
    assert_eq!(ready.pid, server.child.id());
    assert!(ready.address.starts_with("127.0.0.1:") && !ready.address.ends_with(":0"));
    (server, ready.address)
}
