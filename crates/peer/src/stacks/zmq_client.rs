//! The zmq stack's client (docs/stacks.md, "zmq"): one thread owns the request and command
//! ROUTER sockets and runs a `zmq::poll` loop; lanes send it their operations over a channel and
//! wake it through a socket pair it polls beside the zmq sockets.
//!
//! An operation is *accepted* when `zmq_send` of its last frame with `ZMQ_DONTWAIT` succeeded;
//! EAGAIN (the high-water mark) leaves it queued until the socket polls writable; EHOSTUNREACH
//! fails it with `connect`. A `send` operation ends when accepted; a `unary` one when its reply
//! arrived. A reply whose id is not in flight, or that does not parse, fails every operation in
//! flight and every later one with `invalid`.

use super::zmq::{CONNECTIONS, HWM, configure, context, endpoint_url};
use super::zmq_wire::{self, COMMAND_ID, Endpoint, HELLO, REQUEST_ID, id_frame};
use super::{ClientSettings, ClientStack, RawCall, Verdict, Workload, resolve_server};
use crate::engine::pool::{Submitter, Ticket};
use crate::engine::saturation::StreamSender;
use crate::engine::{Clock, Lane, OpError, OpOutcome};
use prost::Message;
use rpcarena_protocol::event::code;
use rpcarena_protocol::pb;
use rpcarena_protocol::workload::Shape;
use std::collections::{HashMap, VecDeque};
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};
use tokio::sync::{Notify, oneshot};

/// The verdict of a command (zmq's `send`), which has no answer: a conformance fault client
/// sends the malformed command and then the good one, and the kit reads the server's `rejected`
/// and `commands` (docs/stacks.md, "Conformance faults on zmq").
pub const NO_ANSWER: &str =
    "a command has no answer; the server's rejected and commands counters (WINDOW END) tell";

/// How long the hello may take on each endpoint.
const HELLO_BOUND: Duration = Duration::from_secs(10);

/// What the thread answers an operation with: the reply frames (unary) or nothing (send).
type Done = Result<Option<Vec<Vec<u8>>>, OpError>;

/// What lanes ask of the socket thread.
enum Job {
    /// Send `frames` on `endpoint`; answer when accepted (command) or replied to (request).
    Send {
        endpoint: Endpoint,
        id: u64,
        frames: Vec<Vec<u8>>,
        done: oneshot::Sender<Done>,
    },
    /// The thread's CPU time so far (CLOCK_THREAD_CPUTIME_ID), in nanoseconds.
    Cpu(oneshot::Sender<u64>),
}

/// How many operations may wait in front of a socket (handed to the socket thread and not yet
/// taken by `zmq_send`) before the backpressure submitter stops: one high-water mark's worth, so
/// that the client's own queue is bounded as the socket's pipe is, and the socket's `EAGAIN`
/// (its high-water mark) is what stops the submissions.
const BACKLOG: usize = HWM as usize;

/// The operations handed to the socket thread and not yet on their socket, per endpoint (request
/// 0, command 1); the thread signals `room` whenever one leaves.
#[derive(Default)]
struct Backlog {
    waiting: [AtomicUsize; 2],
    room: Notify,
}

impl Backlog {
    fn enter(&self, slot: usize) {
        self.waiting[slot].fetch_add(1, Ordering::AcqRel);
    }

    /// One operation left the queue in front of socket `slot` (sent, or failed).
    fn leave(&self, slot: usize) {
        self.waiting[slot].fetch_sub(1, Ordering::AcqRel);
        self.room.notify_one();
    }

    fn waiting(&self, slot: usize) -> usize {
        self.waiting[slot].load(Ordering::Acquire)
    }
}

/// The socket of `endpoint`: 0 request, 1 command.
fn slot(endpoint: Endpoint) -> usize {
    usize::from(endpoint == Endpoint::Command)
}

/// The lanes' handle on the socket thread.
#[derive(Clone)]
struct Handle {
    jobs: mpsc::Sender<Job>,
    wake: Arc<UnixStream>,
    next_id: Arc<AtomicU64>,
    backlog: Arc<Backlog>,
}

impl Handle {
    /// Hands `job` to the thread and wakes it.
    fn submit(&self, job: Job) -> Result<(), OpError> {
        self.jobs.send(job).map_err(|_| thread_gone())?;
        // A full pipe means a wake-up is already pending.
        let _ = (&*self.wake).write(&[1]);
        Ok(())
    }

    /// Sends `frames` (after the id frame) on `endpoint` and waits for the outcome.
    async fn call(&self, endpoint: Endpoint, body: Vec<u8>) -> Done {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (done, outcome) = oneshot::channel();
        let frames = vec![id_frame(id).to_vec(), body];
        self.backlog.enter(slot(endpoint));
        let job = Job::Send {
            endpoint,
            id,
            frames,
            done,
        };
        if let Err(e) = self.submit(job) {
            self.backlog.leave(slot(endpoint));
            return Err(e);
        }
        outcome.await.map_err(|_| thread_gone())?
    }
}

fn thread_gone() -> OpError {
    OpError::new(code::INTERNAL, "the zmq socket thread has stopped")
}

/// The client: the socket thread's handle.
pub struct ZmqClient {
    handle: Handle,
    /// The socket thread, joined at close so that its last commands leave before the process
    /// exits (see [`CLOSE_LINGER_MS`]).
    thread: std::thread::JoinHandle<()>,
}

/// `ZMQ_LINGER` of the command socket when the client closes: a command has no reply, so one
/// still queued at the end (a fault client's good command after its malformed one) would be
/// lost with linger 0; the server's count would then be short. Measuring runs at linger 0.
const CLOSE_LINGER_MS: i32 = 1000;

/// A lane: the shared socket thread, and the workload.
#[derive(Clone)]
pub struct ZmqLane {
    handle: Handle,
    workload: Workload,
}

impl ZmqClient {
    /// The socket thread's CPU time so far, in nanoseconds.
    pub async fn thread_cpu_ns(&self) -> Option<u64> {
        let (answer, cpu) = oneshot::channel();
        self.handle.submit(Job::Cpu(answer)).ok()?;
        cpu.await.ok()
    }
}

impl ClientStack for ZmqClient {
    type Lane = ZmqLane;
    // Every lane submits on the one thread; the socket's high-water mark pushes back.
    type Submitter = ZmqSubmitter;

    fn submitter(&self, lanes: Vec<ZmqLane>) -> ZmqSubmitter {
        ZmqSubmitter {
            handle: self.handle.clone(),
            lanes,
        }
    }

    fn lanes_back(submitter: ZmqSubmitter) -> Vec<ZmqLane> {
        submitter.lanes
    }

    async fn connect(settings: &ClientSettings) -> Result<(ZmqClient, Vec<ZmqLane>), OpError> {
        let addr = resolve_server(settings).await?;
        let (connected, ready) = oneshot::channel();
        let (jobs, queue) = mpsc::channel();
        let backlog = Arc::new(Backlog::default());
        let thread_backlog = Arc::clone(&backlog);
        let (wake, woken) = UnixStream::pair()
            .map_err(|e| OpError::new(code::INTERNAL, format!("no socket pair: {e}")))?;
        for end in [&wake, &woken] {
            end.set_nonblocking(true)
                .map_err(|e| OpError::new(code::INTERNAL, format!("socket pair: {e}")))?;
        }
        let thread = std::thread::Builder::new()
            .name("zmq-client".to_string())
            .spawn(move || match Sockets::connect(addr, thread_backlog) {
                Ok(sockets) => {
                    let _ = connected.send(Ok(()));
                    sockets.run(queue, woken);
                }
                Err(e) => {
                    let _ = connected.send(Err(e));
                }
            })
            .map_err(|e| OpError::new(code::INTERNAL, format!("no zmq thread: {e}")))?;
        ready.await.map_err(|_| thread_gone())??;
        let handle = Handle {
            jobs,
            wake: Arc::new(wake),
            next_id: Arc::new(AtomicU64::new(1)),
            backlog,
        };
        let lanes = (0..settings.lanes)
            .map(|_| ZmqLane {
                handle: handle.clone(),
                workload: settings.workload,
            })
            .collect();
        Ok((ZmqClient { handle, thread }, lanes))
    }

    fn connections(&self) -> u32 {
        CONNECTIONS
    }

    async fn submit_cpu_ns(&self) -> Option<u64> {
        self.thread_cpu_ns().await
    }

    async fn close(self, lanes: Vec<ZmqLane>) {
        // The thread ends when the last handle (its job channel) is gone; its sockets close
        // with the command socket lingering, and the join waits for that.
        drop(lanes);
        let ZmqClient { handle, thread } = self;
        drop(handle);
        let _ = tokio::task::spawn_blocking(move || thread.join()).await;
    }
}

impl ZmqLane {
    /// The endpoint of the workload's shape: commands for `send`, requests otherwise.
    fn endpoint(&self) -> Endpoint {
        match self.workload.shape {
            Shape::Send => Endpoint::Command,
            _ => Endpoint::Request,
        }
    }

    /// One operation's request on the endpoint of its shape; the reply frames for unary.
    async fn exchange(&self, request: &pb::Request) -> Done {
        self.handle
            .call(self.endpoint(), request.encode_to_vec())
            .await
    }
}

impl Lane for ZmqLane {
    async fn call(&mut self, seq: u64) -> Result<OpOutcome, OpError> {
        let workload = self.workload;
        let request = workload.request(seq, 0);
        let frames = self.exchange(&request).await?;
        let Some(frames) = frames else {
            // a command: accepted, nothing comes back
            return Ok(workload.outcome(1, 0, 0));
        };
        let reply = zmq_wire::parse_reply(&frames).map_err(|m| OpError::new(code::INVALID, m))?;
        if reply.status.code != 0 {
            return Err(OpError::new(
                code::RPC,
                format!(
                    "status {} from the request endpoint: {}",
                    reply.status.code, reply.status.message
                ),
            ));
        }
        let bytes = workload.checked_response(&reply.response, seq)?;
        Ok(workload.outcome(1, 1, bytes))
    }

    async fn saturate<C: Clock>(&mut self, _: &C, _: &mut StreamSender) -> Result<(), OpError> {
        Err(OpError::new(
            code::CONFIG,
            "the zmq stack has no client streams; send-saturation runs --shape send on it",
        ))
    }
}

impl RawCall for ZmqLane {
    async fn raw_call(
        &mut self,
        shape: Shape,
        requests: Vec<pb::Request>,
    ) -> Result<Verdict, OpError> {
        let Some(request) = requests.first() else {
            return Err(OpError::new(code::CONFIG, "a zmq call carries one request"));
        };
        let endpoint = match shape {
            Shape::Send => Endpoint::Command,
            _ => Endpoint::Request,
        };
        let frames = self.handle.call(endpoint, request.encode_to_vec()).await?;
        let Some(frames) = frames else {
            // a command has no answer: the kit reads the server's counters instead
            return Ok(Verdict {
                code: crate::fault::INVALID_ARGUMENT,
                message: NO_ANSWER.to_string(),
                responses: 0,
            });
        };
        let reply = zmq_wire::parse_reply(&frames).map_err(|m| OpError::new(code::INVALID, m))?;
        Ok(Verdict {
            code: reply.status.code,
            message: reply.status.message,
            responses: u64::from(!frames[2].is_empty()),
        })
    }
}

/// The backpressure submitter: ready while fewer than [`BACKLOG`] operations wait in front of the
/// socket of the workload's shape, so submissions go on until the socket's `EAGAIN` holds them
/// there (docs/stacks.md, "zmq"). Its tickets are lanes on the one socket thread.
pub struct ZmqSubmitter {
    handle: Handle,
    lanes: Vec<ZmqLane>,
}

impl Submitter for ZmqSubmitter {
    type Ticket = ZmqLane;

    async fn ready(&mut self) -> Result<ZmqLane, OpError> {
        let Some(lane) = self.lanes.first() else {
            return Err(OpError::new(code::CONFIG, "the zmq submitter has no lane"));
        };
        let slot = slot(lane.endpoint());
        // A `leave` between the check and the wait stores a permit in `room`: nothing is missed.
        while self.handle.backlog.waiting(slot) >= BACKLOG {
            self.handle.backlog.room.notified().await;
        }
        Ok(lane.clone())
    }
}

impl Ticket for ZmqLane {
    async fn call(mut self, seq: u64) -> Result<OpOutcome, OpError> {
        Lane::call(&mut self, seq).await
    }
}

// ---------------------------------------------------------------------------------------------
// The socket thread

/// An operation waiting for its turn on a full socket.
struct Queued {
    id: u64,
    frames: Vec<Vec<u8>>,
    done: oneshot::Sender<Done>,
}

/// The socket thread's state.
impl Drop for Sockets {
    fn drop(&mut self) {
        let _ = self.command.set_linger(CLOSE_LINGER_MS);
    }
}

struct Sockets {
    _context: zmq::Context,
    request: zmq::Socket,
    command: zmq::Socket,
    /// The request endpoint, for messages.
    server: String,
    /// Requests sent and not yet answered, by id.
    in_flight: HashMap<u64, oneshot::Sender<Done>>,
    /// Operations the request (0) and command (1) sockets could not take yet (EAGAIN).
    queued: [VecDeque<Queued>; 2],
    /// Once a reply was wrong, every operation fails with it.
    poisoned: Option<OpError>,
    /// The lanes' count of operations not yet on their socket.
    backlog: Arc<Backlog>,
}

impl Sockets {
    /// Connects both sockets and runs the hello on each (docs/stacks.md, "Hello").
    fn connect(addr: std::net::SocketAddr, backlog: Arc<Backlog>) -> Result<Sockets, OpError> {
        let context = context();
        let socket = || -> Result<zmq::Socket, OpError> {
            let socket = context
                .socket(zmq::ROUTER)
                .map_err(|e| OpError::new(code::INTERNAL, format!("no ROUTER socket: {e}")))?;
            configure(&socket)
                .map_err(|e| OpError::new(code::INTERNAL, format!("socket options: {e}")))?;
            Ok(socket)
        };
        let server = endpoint_url(addr.ip(), &addr.port().to_string());
        let request = socket()?;
        connect_to(&request, &server)?;
        hello(&request, REQUEST_ID, &server)?;
        let port = hello_answer(&request, &server)?;
        let command_url = endpoint_url(addr.ip(), &port);
        let command = socket()?;
        connect_to(&command, &command_url)?;
        hello(&command, COMMAND_ID, &command_url)?;
        Ok(Sockets {
            _context: context,
            request,
            command,
            server,
            in_flight: HashMap::new(),
            queued: [VecDeque::new(), VecDeque::new()],
            poisoned: None,
            backlog,
        })
    }

    /// The poll loop, until every lane's handle is gone.
    fn run(mut self, jobs: mpsc::Receiver<Job>, mut woken: UnixStream) {
        let wake_fd = woken.as_raw_fd();
        loop {
            let (readable, writable, wake) = {
                let want = |queued: &VecDeque<Queued>| {
                    if queued.is_empty() {
                        zmq::PollEvents::empty()
                    } else {
                        zmq::POLLOUT
                    }
                };
                let mut items = [
                    self.request
                        .as_poll_item(zmq::POLLIN | want(&self.queued[0])),
                    self.command.as_poll_item(want(&self.queued[1])),
                    zmq::PollItem::from_fd(wake_fd, zmq::POLLIN),
                ];
                if let Err(e) = zmq::poll(&mut items, -1) {
                    self.fail_all(OpError::new(code::INTERNAL, format!("zmq_poll: {e}")));
                    return;
                }
                (
                    items[0].is_readable(),
                    [items[0].is_writable(), items[1].is_writable()],
                    items[2].is_readable(),
                )
            };
            if wake {
                let mut drained = [0u8; 256];
                while matches!(woken.read(&mut drained), Ok(n) if n > 0) {}
            }
            // Jobs first: a queue that was waiting keeps its order behind them only if full.
            loop {
                match jobs.try_recv() {
                    Ok(job) => self.take(job),
                    Err(mpsc::TryRecvError::Empty) => break,
                    Err(mpsc::TryRecvError::Disconnected) => return,
                }
            }
            for (index, ready) in writable.into_iter().enumerate() {
                if ready {
                    self.flush(index);
                }
            }
            if readable {
                self.read_replies();
            }
        }
    }

    fn socket(&self, index: usize) -> &zmq::Socket {
        if index == 0 {
            &self.request
        } else {
            &self.command
        }
    }

    /// A job from a lane.
    fn take(&mut self, job: Job) {
        match job {
            Job::Cpu(answer) => {
                let _ = answer.send(thread_cpu_ns());
            }
            Job::Send {
                endpoint,
                id,
                frames,
                done,
            } => {
                let index = slot(endpoint);
                if let Some(error) = &self.poisoned {
                    self.backlog.leave(index);
                    let _ = done.send(Err(error.clone()));
                    return;
                }
                self.queued[index].push_back(Queued { id, frames, done });
                self.flush(index);
            }
        }
    }

    /// Sends what the socket takes from its queue, in order, until EAGAIN.
    fn flush(&mut self, index: usize) {
        while let Some(next) = self.queued[index].pop_front() {
            let peer = if index == 0 { REQUEST_ID } else { COMMAND_ID };
            let message = std::iter::once(peer.to_vec()).chain(next.frames.iter().cloned());
            let sent = self.socket(index).send_multipart(message, zmq::DONTWAIT);
            if !matches!(sent, Err(zmq::Error::EAGAIN)) {
                self.backlog.leave(index);
            }
            match sent {
                Ok(()) if index == 0 => {
                    self.in_flight.insert(next.id, next.done);
                }
                Ok(()) => {
                    let _ = next.done.send(Ok(None));
                }
                Err(zmq::Error::EAGAIN) => {
                    self.queued[index].push_front(next);
                    return;
                }
                Err(e) => {
                    let error = OpError::new(
                        code::CONNECT,
                        format!(
                            "zmq_send of id {} to the {} endpoint failed: {e}",
                            next.id,
                            if index == 0 { "request" } else { "command" }
                        ),
                    );
                    let _ = next.done.send(Err(error));
                }
            }
        }
    }

    /// Every reply that is there, handed to its operation.
    fn read_replies(&mut self) {
        loop {
            let frames = match self.request.recv_multipart(zmq::DONTWAIT) {
                Ok(frames) => frames,
                Err(zmq::Error::EAGAIN) => return,
                Err(e) => {
                    let message = format!("zmq_recv from {} failed: {e}", self.server);
                    return self.fail_all(OpError::new(code::CONNECT, message));
                }
            };
            let body = frames.get(1..).unwrap_or_default();
            let id = body
                .first()
                .and_then(|f| <[u8; 8]>::try_from(f.as_slice()).ok())
                .map(u64::from_be_bytes);
            match id.and_then(|id| self.in_flight.remove(&id)) {
                Some(done) => {
                    let _ = done.send(Ok(Some(body.to_vec())));
                }
                None => {
                    let message = format!(
                        "a reply from {} for no operation in flight: {}",
                        self.server,
                        zmq_wire::describe(body)
                    );
                    self.fail_all(OpError::new(code::INVALID, message));
                }
            }
        }
    }

    /// Fails every operation in flight or queued, and every later one, with `error`.
    fn fail_all(&mut self, error: OpError) {
        for (_, done) in self.in_flight.drain() {
            let _ = done.send(Err(error.clone()));
        }
        for (index, queue) in self.queued.iter_mut().enumerate() {
            for queued in queue.drain(..) {
                self.backlog.leave(index);
                let _ = queued.done.send(Err(error.clone()));
            }
        }
        self.poisoned.get_or_insert(error);
    }
}

/// `zmq_connect`, as an operation error.
fn connect_to(socket: &zmq::Socket, url: &str) -> Result<(), OpError> {
    socket
        .connect(url)
        .map_err(|e| OpError::new(code::CONNECT, format!("zmq_connect {url}: {e}")))
}

/// Sends `HELLO` to `peer`, retrying every 1 ms while the handshake is not done (EHOSTUNREACH).
fn hello(socket: &zmq::Socket, peer: &[u8], url: &str) -> Result<(), OpError> {
    let began = Instant::now();
    loop {
        match socket.send_multipart([peer, HELLO], zmq::DONTWAIT) {
            Ok(()) => return Ok(()),
            Err(zmq::Error::EHOSTUNREACH | zmq::Error::EAGAIN) if began.elapsed() < HELLO_BOUND => {
                std::thread::sleep(Duration::from_millis(1));
            }
            Err(e) => {
                return Err(OpError::new(
                    code::CONNECT,
                    format!("the hello to {url} failed within {HELLO_BOUND:?}: {e}"),
                ));
            }
        }
    }
}

/// Reads the server's `[HELLO][PORT]`; returns the command endpoint's port.
fn hello_answer(socket: &zmq::Socket, url: &str) -> Result<String, OpError> {
    let timeout = i64::try_from(HELLO_BOUND.as_millis()).unwrap_or(i64::MAX);
    let ready = socket
        .poll(zmq::POLLIN, timeout)
        .map_err(|e| OpError::new(code::CONNECT, format!("zmq_poll on {url}: {e}")))?;
    if ready == 0 {
        return Err(OpError::new(
            code::TIMEOUT,
            format!("no answer to the hello from {url} within {HELLO_BOUND:?}"),
        ));
    }
    let frames = socket
        .recv_multipart(0)
        .map_err(|e| OpError::new(code::CONNECT, format!("zmq_recv from {url}: {e}")))?;
    match frames.as_slice() {
        [_, hello, port]
            if hello.as_slice() == HELLO && std::str::from_utf8(port).is_ok_and(is_port) =>
        {
            Ok(String::from_utf8_lossy(port).into_owned())
        }
        _ => Err(OpError::new(
            code::INVALID,
            format!(
                "the answer to the hello from {url} is not [HELLO][PORT]: {}",
                zmq_wire::describe(frames.get(1..).unwrap_or_default())
            ),
        )),
    }
}

fn is_port(text: &str) -> bool {
    text.parse::<u16>().is_ok_and(|port| port > 0)
}

/// This thread's CPU time (CLOCK_THREAD_CPUTIME_ID), in nanoseconds (0 if unreadable).
fn thread_cpu_ns() -> u64 {
    use nix::time::{ClockId, clock_gettime};
    clock_gettime(ClockId::CLOCK_THREAD_CPUTIME_ID).map_or(0, |t| {
        u64::try_from(t.tv_sec()).unwrap_or(0) * 1_000_000_000
            + u64::try_from(t.tv_nsec()).unwrap_or(0)
    })
}
