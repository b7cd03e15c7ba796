//! `client`: connect, validate one operation, warm up, `armed`, START, the admission window,
//! `sample`, SHUTDOWN, `stopped` (docs/peer-protocol.md, "armed" and "sample").

use crate::allocations;
use crate::args::{ArrivalArg, ClientArgs, Load, Stack};
use crate::commands::{CommandError, Commands, Input};
use crate::engine::backpressure::BackpressureSchedule;
use crate::engine::generator::run_open;
use crate::engine::lanes::{SharedWindow, run_closed, run_lanes};
use crate::engine::open::{Arrival, OpenConfig};
use crate::engine::pool::{PoolSchedule, run_pool};
use crate::engine::saturation::run_saturation;
use crate::engine::tally::{ModelReport, Totals};
use crate::engine::window::WindowSchedule;
use crate::engine::{Clock, Lane, LoadModel, MonotonicClock, OpError, Window};
use crate::events::emit;
use crate::failure::{FailExt, Failure};
use crate::fault::{ClientFault, Misjudged, judge};
use crate::stacks::grpc::GrpcClient;
use crate::stacks::quic::QuicClient;
use crate::stacks::tcp::TcpClient;
use crate::stacks::{ClientSettings, ClientStack, RawCall, Workload};
use crate::tls;
use crate::transport::Poller;
use rpcarena_protocol::event::{Armed, Command, Event, Stopped, code, phase};
use std::sync::Arc;
use std::time::Duration;

/// Safety bound on connecting (the controller has its own, usually shorter, timeouts).
const CONNECT_BOUND: Duration = Duration::from_secs(30);
/// Safety bound on the validation operation.
const VALIDATE_BOUND: Duration = Duration::from_secs(120);
/// What a warmup operation that outlives `--drain-ms` after the warmup is told it missed.
const WARMUP_BOUND: &str = "the warmup's drain bound (--drain-ms after --warmup-ms)";

/// The load model the arguments ask for (args.rs has checked that its arguments are there).
pub fn load_model(args: &ClientArgs) -> LoadModel {
    match args.load {
        Load::Closed => LoadModel::Closed,
        Load::Window => LoadModel::Window {
            in_flight: args.in_flight.unwrap_or(args.concurrency),
        },
        Load::Backpressure => LoadModel::Backpressure {
            max_in_flight: args.max_in_flight.unwrap_or(args.concurrency),
        },
        Load::SendSaturation => LoadModel::SendSaturation {
            streams: args.streams.unwrap_or(args.concurrency),
            settle_ns: args.settle_ms.unwrap_or(0).saturating_mul(1_000_000),
        },
        Load::Open => LoadModel::Open(OpenConfig {
            rate: args.rate.unwrap_or(1.0),
            arrival: match args.arrival.unwrap_or(ArrivalArg::Constant) {
                ArrivalArg::Constant => Arrival::Constant,
                ArrivalArg::Poisson => Arrival::Poisson,
            },
            seed: args.seed.unwrap_or(0),
        }),
    }
}

/// How many lanes (tcp: connections) a model needs: `--in-flight` for window, `--streams` for
/// send-saturation, `--concurrency` otherwise (backpressure: tcp's pool of connections; open:
/// the cap on operations in flight).
pub fn lanes_for(model: &LoadModel, concurrency: u32) -> u32 {
    match model {
        LoadModel::Window { in_flight } => *in_flight,
        LoadModel::SendSaturation { streams, .. } => *streams,
        LoadModel::Closed | LoadModel::Backpressure { .. } | LoadModel::Open(_) => concurrency,
    }
}

/// Runs `model` through `window` on `lanes` and merges what it measured.
pub async fn run_model<S: ClientStack>(
    stack: &S,
    lanes: Vec<S::Lane>,
    model: LoadModel,
    clock: MonotonicClock,
    window: Window,
    bound: &'static str,
) -> Result<(Vec<S::Lane>, Totals), OpError> {
    match model {
        LoadModel::Closed => {
            let (lanes, mut totals) = run_closed(lanes, clock, window, bound).await?;
            totals.model.load = model.name();
            Ok((lanes, totals))
        }
        LoadModel::Window { in_flight } => {
            let shared = SharedWindow::new(WindowSchedule::new(&window, in_flight));
            let (lanes, mut totals) =
                run_lanes(lanes, |_| shared.clone(), clock, window, bound).await?;
            totals.model = ModelReport {
                load: model.name(),
                max_in_flight: Some(shared.max_in_flight()),
                ..ModelReport::default()
            };
            Ok((lanes, totals))
        }
        LoadModel::Backpressure { max_in_flight } => {
            let mut submitter = stack.submitter(lanes);
            let mut schedule = BackpressureSchedule::new(&window, max_in_flight);
            let tally = run_pool(&mut submitter, &mut schedule, clock, window, bound).await;
            if schedule.times_capped() > 0 {
                eprintln!(
                    "rpcarena-peer-rust: backpressure: the safety cap --max-in-flight {max_in_flight} \
                     held the submitter back {} times; the transport did not push back below it",
                    schedule.times_capped()
                );
            }
            let mut totals = Totals::merge([tally], None);
            totals.model = ModelReport {
                load: model.name(),
                max_in_flight: Some(schedule.max_in_flight()),
                ..ModelReport::default()
            };
            Ok((S::lanes_back(submitter), totals))
        }
        LoadModel::SendSaturation { settle_ns, .. } => {
            // Summaries may take the settle time, and never more than the drain allows.
            let settle = Window {
                hard_deadline: window
                    .deadline
                    .saturating_add(settle_ns.min(window.hard_deadline - window.deadline)),
                ..window
            };
            run_saturation(lanes, clock, settle, bound).await
        }
        LoadModel::Open(config) => run_open(lanes, config, clock, window, bound).await,
    }
}

/// Runs the client through one sample.
pub async fn run(args: ClientArgs) -> Result<(), Failure> {
    let config =
        tls::client_config(&args.ca, tls::alpn(args.stack)).fail(phase::STARTUP, code::CONFIG)?;
    let settings = ClientSettings {
        server: args.server.clone(),
        server_name: args.server_name.clone(),
        tls: Arc::new(config),
        workload: Workload {
            shape: args.shape,
            request_size: args.request_size,
            response_size: args.response_size,
            messages: args.messages_per_stream,
            payload: args.payload,
        },
        lanes: lanes_for(&load_model(&args), args.concurrency),
    };
    let commands = Commands::from_stdin();
    match args.stack {
        Stack::Grpc => sample::<GrpcClient>(&args, &settings, commands).await,
        Stack::Quic => sample::<QuicClient>(&args, &settings, commands).await,
        Stack::Tcp => sample::<TcpClient>(&args, &settings, commands).await,
    }
}

/// Why a client's sample failed (the phase and code are the [`Failure`]'s).
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// An operation failed: connecting, the validation operation, or the load model's shell.
    #[error("{}", .0.message)]
    Operation(OpError),
    /// Operations of the warmup failed.
    #[error("{failed} of the {phase} operations failed; the first: {first}")]
    Operations {
        /// How many failed.
        failed: u64,
        /// The phase they ran in.
        phase: &'static str,
        /// The message of the first failure.
        first: String,
    },
    /// There is no lane to run the validation operation on.
    #[error("--concurrency must be at least 1")]
    NoLanes,
    /// The sample's histograms cannot be encoded.
    #[error(transparent)]
    Report(#[from] rpcarena_protocol::histogram::HistogramError),
    /// The server answered a conformance fault's malformed call wrongly.
    #[error(transparent)]
    Fault(#[from] Misjudged),
    /// The server refused the malformed call but then failed the well-formed one after it.
    #[error(
        "the server refused the malformed call but then failed a well-formed one: {}",
        .0.message
    )]
    AfterFault(OpError),
}

/// An operation's failure in `phase`, with the operation's code.
fn op_failure(phase: &'static str, error: OpError) -> Failure {
    Failure::new(phase, error.code, ClientError::Operation(error))
}

/// The failure of a window in which operations failed, with the first failure's code.
fn window_failure(phase: &'static str, totals: &Totals) -> Option<Failure> {
    let (code, message) = totals.first_failure()?;
    let error = ClientError::Operations {
        failed: totals.tally.failed,
        phase,
        first: message.to_string(),
    };
    Some(Failure::new(phase, code, error))
}

/// One sample on stack `S`: connect, validate, warm up, `armed`, START, the window, `sample`,
/// SHUTDOWN, `stopped` (or a conformance fault's probe instead of measuring).
async fn sample<S: ClientStack>(
    args: &ClientArgs,
    settings: &ClientSettings,
    mut commands: Commands,
) -> Result<(), Failure> {
    let model = load_model(args);
    let clock = MonotonicClock::new();

    // Connecting, validating and warming up race the controller: SHUTDOWN or the end of stdin
    // (the controller died or gave up) stops the client at once instead of after the bounds,
    // and START or another line is a protocol error in the phase it arrives in.
    let connected = unless_shutdown(&mut commands, phase::CONNECT, connect::<S>(settings, clock));
    let Some((stack, lanes, connect_ns)) = connected.await? else {
        stop_early("connecting");
        return Ok(());
    };
    if let Some(fault) = args.conformance_fault {
        return probe(stack, lanes, fault, settings.workload, &mut commands).await;
    }
    let phases = Phases {
        stack: &stack,
        model,
        clock,
        args,
    };
    let prepared = phases.prepare(lanes, &mut commands).await?;
    let Some((lanes, warmup_completed)) = prepared else {
        return Ok(());
    };

    emit(&Event::Armed(Armed {
        lanes: settings.lanes,
        connections: stack.connections(),
        connect_ns: Some(connect_ns),
        warmup_completed,
        warmup_segments: Vec::new(),
    }));
    if !started(&mut commands).await? {
        // The controller gave up before measuring: close cleanly, no sample.
        stack.close(lanes).await;
        emit(&Event::Stopped(Stopped::default()));
        return Ok(());
    }
    let Some(lanes) = phases.measure(lanes, &mut commands).await? else {
        return Ok(());
    };
    shutdown_after_sample(&mut commands).await?;
    stack.close(lanes).await;
    emit(&Event::Stopped(Stopped::default()));
    Ok(())
}

/// What the phases of one sample work with: the connected stack, the load model, the clock and
/// the arguments.
struct Phases<'a, S> {
    stack: &'a S,
    model: LoadModel,
    clock: MonotonicClock,
    args: &'a ClientArgs,
}

impl<S: ClientStack> Phases<'_, S> {
    /// A window opening now, `length_ms` long, with `--drain-ms` for the operations still in
    /// flight at its end.
    fn window(&self, length_ms: u64) -> Window {
        Window::new(
            self.clock.now(),
            length_ms.saturating_mul(1_000_000),
            self.args.drain_ms.saturating_mul(1_000_000),
        )
    }

    /// The validation operation, then the warmup, each unless SHUTDOWN arrives first (`None`,
    /// with `stopped` printed). Returns the lanes and the warmup's completed operations.
    async fn prepare(
        &self,
        mut lanes: Vec<S::Lane>,
        commands: &mut Commands,
    ) -> Result<Option<(Vec<S::Lane>, u64)>, Failure> {
        let validated = unless_shutdown(commands, phase::VALIDATE, validate(&mut lanes));
        if validated.await?.is_none() {
            stop_early("the validation operation");
            return Ok(None);
        }
        let warmed = unless_shutdown(commands, phase::WARMUP, self.warm_up(lanes)).await?;
        if warmed.is_none() {
            stop_early("the warmup");
        }
        Ok(warmed)
    }

    /// The untimed warmup: the load model for `--warmup-ms`, then every operation still in
    /// flight may take `--drain-ms` to finish (docs/peer-protocol.md, "Lifecycle"); any failure,
    /// a missed bound included (`timeout`), fails the warmup. Returns the lanes and the
    /// operations completed.
    async fn warm_up(&self, lanes: Vec<S::Lane>) -> Result<(Vec<S::Lane>, u64), Failure> {
        if self.args.warmup_ms == 0 {
            return Ok((lanes, 0));
        }
        let window = self.window(self.args.warmup_ms);
        let warmup = run_model(
            self.stack,
            lanes,
            self.model,
            self.clock,
            window,
            WARMUP_BOUND,
        );
        let (lanes, totals) = warmup.await.map_err(|e| op_failure(phase::WARMUP, e))?;
        if let Some(failure) = window_failure(phase::WARMUP, &totals) {
            return Err(failure);
        }
        Ok((lanes, totals.tally.completed))
    }

    /// The measured window after START: runs the load model with the transport statistics
    /// polled alongside and prints the `sample`. `None` (with `stopped` printed) if SHUTDOWN
    /// came first.
    async fn measure(
        &self,
        lanes: Vec<S::Lane>,
        commands: &mut Commands,
    ) -> Result<Option<Vec<S::Lane>>, Failure> {
        // Transport statistics: read at START, polled through the window, read at its end.
        let poller = self.stack.transport_probe().map(Poller::start);
        // The whole process's allocations from START to the end of the drain.
        let allocated_before = allocations::snapshot();
        let window = self.window(self.args.window_ms);
        let bound = match self.model {
            LoadModel::SendSaturation { .. } => {
                "the settle bound (--settle-ms, at most --drain-ms)"
            }
            _ => "the drain bound (--drain-ms)",
        };
        let measured = unless_shutdown(commands, phase::MEASURE, async {
            run_model(self.stack, lanes, self.model, self.clock, window, bound)
                .await
                .map_err(|e| op_failure(phase::MEASURE, e))
        })
        .await?;
        let Some((lanes, totals)) = measured else {
            stop_early("the window");
            return Ok(None);
        };
        let allocated = allocations::snapshot().since(allocated_before);
        let mut report = totals
            .report(&window)
            .map_err(|e| Failure::new(phase::MEASURE, code::INTERNAL, ClientError::Report(e)))?;
        report.transport = poller.and_then(Poller::finish).map(Box::new);
        report.allocations = Some(allocated.count);
        report.allocated_bytes = Some(allocated.bytes);
        emit(&Event::Sample(report));
        Ok(Some(lanes))
    }
}

/// Waits for the armed client's command: `true` for START, `false` for SHUTDOWN.
async fn started(commands: &mut Commands) -> Result<bool, Failure> {
    match commands.next().await {
        Input::Command(Command::Start) => Ok(true),
        Input::Command(Command::Shutdown) => Ok(false),
        other => Err(misplaced(phase::ARMED, other)),
    }
}

/// After the sample a client takes only SHUTDOWN.
async fn shutdown_after_sample(commands: &mut Commands) -> Result<(), Failure> {
    match commands.next().await {
        Input::Command(Command::Shutdown) => Ok(()),
        Input::Command(Command::Start) => Err(Failure::new(
            phase::SHUTDOWN,
            code::PROTOCOL,
            CommandError::SecondStart,
        )),
        other => Err(misplaced(phase::SHUTDOWN, other)),
    }
}

/// SHUTDOWN (or the end of stdin) before `armed` or during the window: stop at once, without
/// closing connections gracefully (the process exit closes them) and without a sample.
fn stop_early(during: &str) {
    eprintln!("rpcarena-peer-rust: SHUTDOWN (or end of stdin) during {during}; stopping");
    emit(&Event::Stopped(Stopped::default()));
}

/// Opens every connection (TLS handshakes included); returns the lanes and how long it took.
async fn connect<S: ClientStack>(
    settings: &ClientSettings,
    clock: MonotonicClock,
) -> Result<(S, Vec<S::Lane>, u64), Failure> {
    let began = clock.now();
    let (stack, lanes) = tokio::time::timeout(CONNECT_BOUND, S::connect(settings))
        .await
        .map_err(|_| {
            OpError::new(
                code::TIMEOUT,
                format!(
                    "connecting to {} took longer than {CONNECT_BOUND:?}",
                    settings.server
                ),
            )
        })
        .and_then(|connected| connected)
        .map_err(|e| op_failure(phase::CONNECT, e))?;
    Ok((stack, lanes, clock.now() - began))
}

/// The first lane, which runs the validation operation.
fn first_lane<L>(lanes: &mut [L]) -> Result<&mut L, Failure> {
    lanes
        .first_mut()
        .ok_or_else(|| Failure::new(phase::STARTUP, code::CONFIG, ClientError::NoLanes))
}

/// One operation of `work` on the first lane within the validation bound, as an [`OpError`].
async fn bounded<T>(
    what: &str,
    work: impl std::future::Future<Output = Result<T, OpError>>,
) -> Result<T, OpError> {
    tokio::time::timeout(VALIDATE_BOUND, work)
        .await
        .map_err(|_| {
            OpError::new(
                code::TIMEOUT,
                format!("{what} took longer than {VALIDATE_BOUND:?}"),
            )
        })
        .and_then(|done| done)
}

/// The validation operation: one operation of the configured shape on the first lane (seq 0),
/// checked as every measured one is.
async fn validate<L: Lane>(lanes: &mut [L]) -> Result<(), Failure> {
    let lane = first_lane(lanes)?;
    bounded("the validation operation", lane.call(0))
        .await
        .map_err(|e| op_failure(phase::VALIDATE, e))?;
    Ok(())
}

/// A conformance fault client (crate::fault): the malformed call on the first lane must be
/// refused with INVALID_ARGUMENT, then a well-formed call on the same lane must succeed; the
/// outcome is `stopped` (pass) or an `error` in phase `validate` (fail).
async fn probe<S: ClientStack>(
    stack: S,
    mut lanes: Vec<S::Lane>,
    fault: ClientFault,
    workload: Workload,
    commands: &mut Commands,
) -> Result<(), Failure> {
    eprintln!(
        "rpcarena-peer-rust: CONFORMANCE FAULT {}: sending {} instead of measuring",
        fault.name(),
        fault.describe()
    );
    let checked = unless_shutdown(commands, phase::VALIDATE, async {
        let lane = first_lane(&mut lanes)?;
        let call = lane.raw_call(workload.shape, fault.requests(&workload));
        let verdict = bounded("the malformed call", call)
            .await
            .map_err(|e| op_failure(phase::VALIDATE, e))?;
        judge(fault, &verdict)
            .map_err(|e| Failure::new(phase::VALIDATE, e.code(), ClientError::Fault(e)))?;
        eprintln!(
            "rpcarena-peer-rust: the server refused the malformed call with INVALID_ARGUMENT: {}",
            verdict.message
        );
        bounded("the well-formed call after the malformed one", lane.call(0))
            .await
            .map_err(|e| Failure::new(phase::VALIDATE, e.code, ClientError::AfterFault(e)))?;
        Ok(())
    })
    .await?;
    if checked.is_none() {
        stop_early("the conformance fault's calls");
        return Ok(());
    }
    stack.close(lanes).await;
    emit(&Event::Stopped(Stopped::default()));
    Ok(())
}

/// Runs `work` unless SHUTDOWN (or the end of stdin) arrives first, which gives `None`. The
/// controller sends nothing else while the client works, so any other input is a protocol error.
async fn unless_shutdown<T>(
    commands: &mut Commands,
    phase: &'static str,
    work: impl std::future::Future<Output = Result<T, Failure>>,
) -> Result<Option<T>, Failure> {
    tokio::select! {
        result = work => result.map(Some),
        input = commands.next() => match input {
            Input::Command(Command::Shutdown) => Ok(None),
            Input::Command(Command::Start) => Err(Failure::new(
                phase,
                code::PROTOCOL,
                CommandError::EarlyStart { phase },
            )),
            other => Err(misplaced(phase, other)),
        },
    }
}

/// A line on stdin that a client does not take in `phase` (START and SHUTDOWN are handled by
/// the caller): a server's window command or no command at all, a protocol error either way.
fn misplaced(phase: &'static str, input: Input) -> Failure {
    let error = match input {
        Input::Command(command) if command.edge().is_some() => CommandError::WindowToClient {
            command: command.as_str(),
        },
        Input::Command(command) => CommandError::Unknown {
            line: command.as_str().to_string(),
        },
        Input::Unknown(line) => CommandError::Unknown { line },
    };
    Failure::new(phase, code::PROTOCOL, error)
}
