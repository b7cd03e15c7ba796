//! The thin shell: starts the peer under test and its partners (the runner's process code:
//! process-group leaders, killed and reaped whatever happens), feeds them commands, and turns
//! what they print into [`Transcript`]s for the pure judges of `check`.

use crate::check::Transcript;
use crate::error::Result;
use rpcarena_model::campaign::Timing;
use rpcarena_model::invocation::{self, ServerTarget};
use rpcarena_model::load::{LoadSpec, Payload};
use rpcarena_model::matrix::SampleConfig;
use rpcarena_protocol::event::{Command, Event, Role};
use rpcarena_protocol::workload::{ClientMode, Shape};
use rpcarena_runner::FileContext;
use rpcarena_runner::{Line, Message, PeerProcess};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, sync_channel};
use std::time::{Duration, Instant};

/// One running peer and what it printed so far.
pub(crate) struct Proc {
    process: PeerProcess,
    rx: Receiver<Message>,
    /// What it printed.
    pub transcript: Transcript,
    closed: bool,
}

impl Proc {
    /// Starts `argv` with its stdout and stderr kept in `dir`.
    pub fn spawn(role: Role, argv: &[String], dir: &Path) -> Result<Proc> {
        std::fs::create_dir_all(dir).file("creating", dir)?;
        // Bounded like the runner's: a peer that floods waits for the kit to read.
        let (tx, rx) = sync_channel(16);
        let process = PeerProcess::spawn(role, argv, dir, tx)?;
        Ok(Proc {
            process,
            rx,
            transcript: Transcript::default(),
            closed: false,
        })
    }

    /// Reads lines until one is an event `accept` takes (returned), the output ends, or
    /// `timeout` passes.
    pub fn until(&mut self, timeout: Duration, accept: impl Fn(&Event) -> bool) -> Option<Event> {
        let deadline = Instant::now() + timeout;
        while !self.closed {
            let left = deadline.saturating_duration_since(Instant::now());
            let Ok(Message { line, .. }) = self.rx.recv_timeout(left) else {
                return None;
            };
            match line {
                Line::Event(event) => {
                    self.transcript.events.push(event.clone());
                    if accept(&event) {
                        return Some(event);
                    }
                }
                Line::Malformed { text, error } => {
                    self.transcript.malformed.push(format!("{error}: {text}"))
                }
                Line::Closed => self.closed = true,
            }
        }
        None
    }

    /// Writes a raw line to stdin (an unknown command, for the lifecycle checks).
    pub fn send(&mut self, command: Command) {
        let _ = self.process.send(command);
    }

    /// Writes any line to stdin.
    pub fn send_line(&mut self, line: &str) -> Result<()> {
        Ok(self.process.send_text(line)?)
    }

    /// Closes stdin.
    pub fn close_stdin(&mut self) {
        self.process.close_stdin();
    }

    /// Waits up to `timeout` for the output to end and the process to exit; kills it (and says
    /// so) when it does not. Returns the transcript.
    pub fn finish(mut self, timeout: Duration) -> Transcript {
        let deadline = Instant::now() + timeout;
        self.until(timeout, |_| false);
        let left = deadline.saturating_duration_since(Instant::now());
        match self.process.wait_exit(left.max(Duration::from_millis(50))) {
            Some(status) => self.transcript.exit = status.code(),
            None => self.transcript.hung = true,
        }
        self.process.kill_and_reap(Duration::from_secs(5));
        self.transcript
    }
}

/// The certificates and the peer under test.
pub(crate) struct Bench {
    /// Scratch directory: certificates and each check's raw output.
    pub dir: PathBuf,
    /// The peer under test's command.
    pub peer: Vec<String>,
    /// The run's CA.
    pub ca: PathBuf,
    /// A CA that signed nothing here (the wrong-CA check).
    pub other_ca: PathBuf,
    /// The server certificate (IP SAN 127.0.0.1).
    pub cert: PathBuf,
    /// Its key.
    pub key: PathBuf,
    /// Stacks the peer under test runs only in plaintext (`zmq`, revision 1.3): every check of
    /// them passes `--tls off` and no certificate or CA.
    pub plaintext: std::collections::BTreeSet<String>,
    counter: std::sync::atomic::AtomicU32,
}

/// The server name the certificate carries.
pub(crate) const SERVER_NAME: &str = "127.0.0.1";

impl Bench {
    /// Creates the certificates in `dir`.
    pub fn new(dir: &Path, peer: Vec<String>) -> Result<Bench> {
        let ca = rpcarena_runner::Authority::create(
            &dir.join("certificates"),
            &dir.join("private"),
            "conformance",
        )?;
        let other = rpcarena_runner::Authority::create(
            &dir.join("other-ca"),
            &dir.join("other-ca-private"),
            "not trusted",
        )?;
        let id = ca.server(SERVER_NAME)?;
        Ok(Bench {
            dir: dir.to_path_buf(),
            peer,
            ca: ca.ca_cert.clone(),
            other_ca: other.ca_cert.clone(),
            cert: id.cert,
            key: id.key,
            plaintext: Default::default(),
            counter: std::sync::atomic::AtomicU32::new(0),
        })
    }

    /// A fresh raw directory for one check.
    pub fn raw(&self, what: &str) -> PathBuf {
        let n = 1 + self
            .counter
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let slug: String = what
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .collect();
        self.dir.join("raw").join(format!("{n:04}-{slug}"))
    }

    /// Whether checks of `stack` run with TLS (all but the plaintext-only stacks).
    pub fn tls(&self, stack: &str) -> bool {
        !self.plaintext.contains(stack)
    }

    /// A short client run of `stack` with its TLS setting (see [`ClientSpec::short`]).
    pub fn short(&self, stack: &str) -> ClientSpec {
        ClientSpec {
            tls: self.tls(stack),
            ..ClientSpec::short(stack)
        }
    }

    /// `server` arguments for `stack` with the run's certificate (none in plaintext).
    pub fn server_argv(&self, command: &[String], stack: &str, extra: &[&str]) -> Vec<String> {
        self.server_argv_tls(command, stack, self.tls(stack), extra)
    }

    /// `server` arguments for `stack`, TLS on or off as `tls` says.
    pub fn server_argv_tls(
        &self,
        command: &[String],
        stack: &str,
        tls: bool,
        extra: &[&str],
    ) -> Vec<String> {
        let mut argv = command.to_vec();
        argv.extend(invocation::server_args(
            stack,
            "127.0.0.1:0",
            tls,
            &self.cert,
            &self.key,
        ));
        argv.extend(extra.iter().map(|s| s.to_string()));
        argv
    }

    /// Starts a server and waits for `ready`; its address, or the transcript of why not.
    pub fn start_server(
        &self,
        command: &[String],
        stack: &str,
        extra: &[&str],
        raw: &Path,
    ) -> Result<(Proc, String), Transcript> {
        self.start_server_argv(self.server_argv(command, stack, extra), raw)
    }

    /// Starts a server from its whole argument vector and waits for `ready`.
    pub fn start_server_argv(
        &self,
        argv: Vec<String>,
        raw: &Path,
    ) -> Result<(Proc, String), Transcript> {
        let mut server = Proc::spawn(Role::Server, &argv, raw).map_err(could_not_start)?;
        match server.until(Duration::from_secs(10), |e| matches!(e, Event::Ready(_))) {
            Some(Event::Ready(ready)) => Ok((server, ready.address)),
            _ => Err(server.finish(Duration::from_secs(2))),
        }
    }
}

/// What a client check runs.
#[derive(Debug, Clone)]
pub(crate) struct ClientSpec {
    pub stack: String,
    pub shape: Shape,
    pub payload: Payload,
    pub warmup: Duration,
    pub window: Duration,
    /// TLS on, or `--tls off` (revision 1.3).
    pub tls: bool,
    /// The official client, or (1.4) replayed requests.
    pub client_mode: ClientMode,
}

impl ClientSpec {
    /// A closed-loop unary sample of `stack`: 100 ms warmup, 200 ms window.
    pub fn short(stack: &str) -> ClientSpec {
        ClientSpec {
            stack: stack.to_string(),
            shape: Shape::Unary,
            payload: Payload::Zeros,
            warmup: Duration::from_millis(100),
            window: Duration::from_millis(200),
            tls: true,
            client_mode: Default::default(),
        }
    }

    /// The client's arguments (after its command).
    pub fn args(&self, address: &str, server_name: &str, ca: &Path) -> Vec<String> {
        let config = SampleConfig {
            key: String::new(),
            cell: String::new(),
            client: String::new(),
            server: String::new(),
            stack: self.stack.clone(),
            shape: self.shape,
            concurrency: 2,
            request_size: if self.payload.takes_sizes() { 64 } else { 0 },
            response_size: if self.payload.takes_sizes() { 64 } else { 0 },
            messages_per_stream: 4,
            payload: self.payload,
            load: LoadSpec::Closed,
            tls: self.tls,
            client_mode: self.client_mode,
        };
        let timing = Timing {
            warmup: self.warmup,
            window: self.window,
            drain: Duration::from_secs(2),
        };
        invocation::client_args(
            &config,
            &timing,
            ServerTarget {
                address,
                server_name,
                ca,
            },
            1,
        )
    }
}

/// The transcript of a process that could not be started.
pub(crate) fn could_not_start(e: crate::Error) -> Transcript {
    Transcript {
        malformed: vec![format!("could not start: {}", e.chain())],
        ..Transcript::default()
    }
}
