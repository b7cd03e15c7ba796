//! The zmq stack's server (docs/stacks.md, "zmq"): two ROUTER sockets, the request endpoint at
//! `--listen` and the command endpoint on a free port of the same host, served by one thread of
//! their own with a `zmq::poll` loop. A reply waits at the client's high-water mark (the
//! push-back reaches the client); one to a client that is gone is counted in `dropped`.

use super::validate::RequestCheck;
use super::zmq::{configure, endpoint_url};
use super::zmq_wire::{self, COMMAND_ID, Endpoint, HELLO, Malformed, REQUEST_ID};
use super::{RunningServer, ServerError, ServerState};
use crate::failure::Failure;
use crate::fault::{Ending, ServerFault, plan};
use rpcarena_protocol::event::{code, phase};
use rpcarena_protocol::pb;
use rpcarena_protocol::workload::{Shape, response_to};
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// How often the server thread looks at its stop flag while idle, in milliseconds.
const STOP_POLL_MS: i64 = 50;
/// gRPC's INVALID_ARGUMENT, the status of a refused request.
const INVALID_ARGUMENT: u32 = 3;

/// Binds both endpoints and serves them on a thread until stopped.
pub async fn serve(addr: SocketAddr, state: Arc<ServerState>) -> Result<RunningServer, Failure> {
    let context = zmq::Context::new();
    let bind = |id: &[u8], url: &str| -> Result<(zmq::Socket, u16), String> {
        let socket = context
            .socket(zmq::ROUTER)
            .map_err(|e| format!("cannot make a ROUTER socket: {e}"))?;
        configure(&socket).map_err(|e| format!("cannot set the socket options: {e}"))?;
        socket
            .set_identity(id)
            .map_err(|e| format!("cannot set ZMQ_ROUTING_ID: {e}"))?;
        socket
            .bind(url)
            .map_err(|e| format!("--listen: cannot bind {url}: {e}"))?;
        let bound = socket
            .get_last_endpoint()
            .map_err(|e| format!("cannot read the bound endpoint: {e}"))?
            .map_err(|raw| format!("the bound endpoint is not text: {raw:?}"))?;
        let port = bound
            .rsplit(':')
            .next()
            .and_then(|p| p.parse().ok())
            .ok_or_else(|| format!("no port in the bound endpoint {bound}"))?;
        Ok((socket, port))
    };
    let fail = |message: String| Failure::new(phase::LISTEN, code::CONFIG, message);
    let (request, port) = bind(
        REQUEST_ID,
        &endpoint_url(addr.ip(), &addr.port().to_string()),
    )
    .map_err(fail)?;
    let (command, command_port) = bind(COMMAND_ID, &endpoint_url(addr.ip(), "*")).map_err(fail)?;
    let local_addr = SocketAddr::new(addr.ip(), port);
    let stopping = Arc::new(AtomicBool::new(false));
    let server = ZmqServer {
        request,
        command,
        port_text: command_port.to_string().into_bytes(),
        state,
        stopping: stopping.clone(),
    };
    let thread = std::thread::Builder::new()
        .name("zmq-server".to_string())
        .spawn(move || server.run())
        .map_err(|e| fail(format!("cannot start the zmq server thread: {e}")))?;
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        let _ = stopped.await;
        stopping.store(true, Ordering::Relaxed);
        let joined = tokio::task::spawn_blocking(move || thread.join()).await;
        // the context goes with the sockets (linger 0: nothing waits)
        drop(context);
        match joined {
            Ok(Ok(())) => Ok(()),
            _ => Err(ServerError::Stopped),
        }
    });
    Ok(RunningServer::new(local_addr, stop, task))
}

/// The server thread's sockets and what it shares with the rest of the server.
struct ZmqServer {
    request: zmq::Socket,
    command: zmq::Socket,
    /// The command endpoint's port in decimal ASCII, the hello's answer.
    port_text: Vec<u8>,
    state: Arc<ServerState>,
    stopping: Arc<AtomicBool>,
}

impl ZmqServer {
    /// Polls both sockets until stopped, reading every message that is there.
    fn run(self) {
        while !self.stopping.load(Ordering::Relaxed) {
            let (request_ready, command_ready) = {
                let mut items = [
                    self.request.as_poll_item(zmq::POLLIN),
                    self.command.as_poll_item(zmq::POLLIN),
                ];
                if let Err(e) = zmq::poll(&mut items, STOP_POLL_MS) {
                    eprintln!("rpcarena-peer-rust: zmq_poll failed on the server: {e}");
                    return;
                }
                (items[0].is_readable(), items[1].is_readable())
            };
            if request_ready {
                while let Some(frames) = receive(&self.request) {
                    self.on_request(frames);
                }
            }
            if command_ready {
                while let Some(frames) = receive(&self.command) {
                    self.on_command(frames);
                }
            }
        }
    }

    /// One message on the request endpoint: a hello, or `[id][Request]`.
    fn on_request(&self, frames: Vec<Vec<u8>>) {
        let Some((peer, body)) = frames.split_first() else {
            return;
        };
        if body.len() == 1 && body[0] == HELLO {
            self.send(peer, vec![HELLO.to_vec(), self.port_text.clone()]);
            return;
        }
        let fault = self.state.fault;
        let (id, request) = match zmq_wire::parse_request(Endpoint::Request, body) {
            Ok(parsed) => parsed,
            Err(malformed) => return self.refuse_malformed(peer, malformed),
        };
        let checked = if fault.is_some_and(|f| !f.validates()) {
            Ok(())
        } else {
            RequestCheck::new(Shape::Unary).check(&request)
        };
        let reply = match checked {
            Err(message) => {
                self.state.reject_with(&message);
                refusal(id, message)
            }
            Ok(()) => match fault {
                None => zmq_wire::reply(
                    id,
                    &pb::Status::default(),
                    &[response_to(&request, request.seq)],
                ),
                Some(fault) => fault_reply(fault, id, &request),
            },
        };
        self.state.counters.add(1, 1, 0, 0, 0);
        self.send(peer, reply);
    }

    /// A request that does not parse: counted and described, and answered with status 3 when
    /// its id is readable.
    fn refuse_malformed(&self, peer: &[u8], malformed: Malformed) {
        self.state.reject_with(&malformed.description);
        self.state.counters.add(1, 1, 0, 0, 0);
        if let Some(id) = malformed.id {
            self.send(peer, refusal(id, malformed.description));
        }
    }

    /// One message on the command endpoint: a hello (ignored), or `[id][Request]`, validated
    /// and counted; nothing is answered.
    fn on_command(&self, frames: Vec<Vec<u8>>) {
        let Some((_, body)) = frames.split_first() else {
            return;
        };
        if body.len() == 1 && body[0] == HELLO {
            return;
        }
        self.state.counters.add(1, 1, 0, 0, 0);
        let request = match zmq_wire::parse_request(Endpoint::Command, body) {
            Ok((_, request)) => request,
            Err(malformed) => return self.state.reject_with(&malformed.description),
        };
        let validates = self.state.fault.is_none_or(|f| f.validates());
        if let (true, Err(message)) = (validates, RequestCheck::new(Shape::Send).check(&request)) {
            return self
                .state
                .reject_with(&format!("command on the command endpoint: {message}"));
        }
        self.state.command();
    }

    /// Sends `frames` to `peer` on the request socket (docs/stacks.md, "zmq"): at the client's
    /// high-water mark (EAGAIN) it waits for POLLOUT, reading nothing meanwhile, so the push-back
    /// reaches the client, and gives up only when the server stops; a reply to a client that is
    /// gone (EHOSTUNREACH) is counted in `dropped`.
    fn send(&self, peer: &[u8], frames: Vec<Vec<u8>>) {
        let replies = u64::from(frames.first().map(Vec::as_slice) != Some(HELLO));
        let message: Vec<Vec<u8>> = std::iter::once(peer.to_vec()).chain(frames).collect();
        loop {
            match self
                .request
                .send_multipart(message.iter().map(Vec::as_slice), zmq::DONTWAIT)
            {
                Ok(()) => return self.state.counters.add(0, 0, replies, 0, 0),
                Err(zmq::Error::EAGAIN) if !self.stopping.load(Ordering::Relaxed) => {
                    // the client's queue is full: wait until it takes more (or SHUTDOWN)
                    let _ = self.request.poll(zmq::POLLOUT, STOP_POLL_MS);
                }
                Err(e) => {
                    self.state.note_rejection(&format!(
                        "a reply dropped on the request endpoint: zmq_send failed with {e} \
                         (the client is gone, or the server stopped while it waited)"
                    ));
                    return self.state.counters.add(0, 0, 0, 0, 1);
                }
            }
        }
    }
}

/// The next message on `socket`, if one is there (without waiting).
fn receive(socket: &zmq::Socket) -> Option<Vec<Vec<u8>>> {
    match socket.recv_multipart(zmq::DONTWAIT) {
        Ok(frames) => Some(frames),
        Err(zmq::Error::EAGAIN) => None,
        Err(e) => {
            eprintln!("rpcarena-peer-rust: zmq_recv failed on the server: {e}");
            None
        }
    }
}

/// `[id][Status 3][]`.
fn refusal(id: [u8; 8], message: String) -> Vec<Vec<u8>> {
    let status = pb::Status {
        code: INVALID_ARGUMENT,
        message,
    };
    zmq_wire::reply(id, &status, &[])
}

/// A fault server's reply to a (validated) unary request (docs/stacks.md, "Conformance faults on
/// zmq"): the changed `Response`, `[id][Status 0][]` for `missing-message` and `early-status`,
/// a fourth frame for `extra-message`, `Status` 13 for `error-status` and `wrong-summary`.
fn fault_reply(fault: ServerFault, id: [u8; 8], request: &pb::Request) -> Vec<Vec<u8>> {
    if fault == ServerFault::ExtraMessage {
        let next = [
            response_to(request, request.seq),
            response_to(request, request.seq.wrapping_add(1)),
        ];
        return zmq_wire::reply(id, &pb::Status::default(), &next);
    }
    let planned = plan::<pb::Response>(fault, Shape::Unary, std::slice::from_ref(request));
    match planned.ending {
        Ending::Status(code, message) => zmq_wire::reply(id, &pb::Status { code, message }, &[]),
        Ending::OkBeforeLast => zmq_wire::reply(id, &pb::Status::default(), &[]),
        Ending::Ok => zmq_wire::reply(id, &pb::Status::default(), &planned.messages),
    }
}
