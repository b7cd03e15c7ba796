//! `client`: connect, validate one operation, warm up, `armed`, START, the admission window,
//! `sample`, SHUTDOWN, `stopped` (docs/peer-protocol.md, "armed" and "sample").

use crate::args::{ArrivalArg, ClientArgs, Load, Stack};
use crate::engine::backpressure::BackpressureSchedule;
use crate::engine::generator::run_open;
use crate::engine::lanes::{SharedWindow, run_closed, run_lanes};
use crate::engine::open::{Arrival, OpenConfig};
use crate::engine::pool::{PoolSchedule, run_pool};
use crate::engine::saturation::run_saturation;
use crate::engine::tally::{ModelReport, Totals};
use crate::engine::window::WindowSchedule;
use crate::engine::{Clock, Lane, LoadModel, MonotonicClock, OpError, Window};
use crate::failure::{FailExt, Failure};
use crate::output::{Commands, Input, emit};
use crate::stacks::grpc::GrpcClient;
use crate::stacks::quic::QuicClient;
use crate::stacks::tcp::TcpClient;
use crate::stacks::{ClientSettings, ClientStack, Workload};
use crate::tls;
use rpcarena_protocol::event::{Armed, Command, Event, Stopped, code, phase};
use std::sync::Arc;
use std::time::Duration;

/// Safety bound on connecting (the controller has its own, usually shorter, timeouts).
const CONNECT_BOUND: Duration = Duration::from_secs(30);
/// Safety bound on the validation operation.
const VALIDATE_BOUND: Duration = Duration::from_secs(120);
/// How long warmup operations still running at the end of the warmup may take to finish.
const WARMUP_DRAIN_BOUND: Duration = Duration::from_secs(120);

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

fn op_failure(phase: &'static str, error: OpError) -> Failure {
    Failure::new(phase, error.code, anyhow::anyhow!(error.message))
}

fn window_failure(phase: &'static str, totals: &Totals) -> Option<Failure> {
    let (code, message) = totals.first_failure()?;
    Some(Failure::new(
        phase,
        code,
        anyhow::anyhow!(
            "{} of the {phase} operations failed; the first: {message}",
            totals.tally.failed
        ),
    ))
}

/// A connected, validated and warmed-up client, ready for START.
struct Prepared<S: ClientStack> {
    stack: S,
    lanes: Vec<S::Lane>,
    connect_ns: u64,
    warmup_completed: u64,
}

/// One sample: prepare, `armed`, START, the window, `sample`, SHUTDOWN, `stopped`. SHUTDOWN or
/// the end of stdin at any point before the sample stops the client cleanly without one.
async fn sample<S: ClientStack>(
    args: &ClientArgs,
    settings: &ClientSettings,
    mut commands: Commands,
) -> Result<(), Failure> {
    let model = load_model(args);
    let clock = MonotonicClock::new();

    // Connecting, validating and warming up race the controller: SHUTDOWN or the end of stdin
    // (the controller died or gave up) stops the client at once instead of after the bounds.
    let prepared = unless_shutdown(
        &mut commands,
        phase::CONNECT,
        prepare::<S>(args, settings, model, clock),
    )
    .await?;
    let Some(Prepared {
        stack,
        lanes,
        connect_ns,
        warmup_completed,
    }) = prepared
    else {
        eprintln!("rpcarena-peer-rust: SHUTDOWN (or end of stdin) before armed; stopping");
        emit(&Event::Stopped(Stopped::default()));
        return Ok(());
    };
    emit(&Event::Armed(Armed {
        lanes: settings.lanes,
        connections: stack.connections(),
        connect_ns: Some(connect_ns),
        warmup_completed,
    }));

    if !wait_for_start(&mut commands).await? {
        // The controller gave up before measuring: close cleanly, no sample.
        stack.close(lanes).await;
        emit(&Event::Stopped(Stopped::default()));
        return Ok(());
    }
    let window = Window::new(
        clock.now(),
        args.window_ms.saturating_mul(1_000_000),
        args.drain_ms.saturating_mul(1_000_000),
    );
    let bound = match model {
        LoadModel::SendSaturation { .. } => "the settle bound (--settle-ms, at most --drain-ms)",
        _ => "the drain bound (--drain-ms)",
    };
    let measured = unless_shutdown(&mut commands, phase::MEASURE, async {
        run_model(&stack, lanes, model, clock, window, bound)
            .await
            .map_err(|e| op_failure(phase::MEASURE, e))
    })
    .await?;
    let Some((lanes, totals)) = measured else {
        eprintln!(
            "rpcarena-peer-rust: SHUTDOWN (or end of stdin) during the window; stopping without a sample"
        );
        emit(&Event::Stopped(Stopped::default()));
        return Ok(());
    };
    let report = totals
        .report(&window)
        .map_err(|e| Failure::new(phase::MEASURE, code::INTERNAL, e))?;
    emit(&Event::Sample(report));

    wait_for_shutdown(&mut commands).await?;
    stack.close(lanes).await;
    emit(&Event::Stopped(Stopped::default()));
    Ok(())
}

/// Connects every lane, validates one operation, and runs the untimed warmup.
async fn prepare<S: ClientStack>(
    args: &ClientArgs,
    settings: &ClientSettings,
    model: LoadModel,
    clock: MonotonicClock,
) -> Result<Prepared<S>, Failure> {
    let began = clock.now();
    let (stack, mut lanes) = tokio::time::timeout(CONNECT_BOUND, S::connect(settings))
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
    let connect_ns = clock.now() - began;

    let first = lanes.first_mut().ok_or_else(|| {
        Failure::new(
            phase::STARTUP,
            code::CONFIG,
            anyhow::anyhow!("--concurrency must be at least 1"),
        )
    })?;
    tokio::time::timeout(VALIDATE_BOUND, first.call(0))
        .await
        .map_err(|_| {
            OpError::new(
                code::TIMEOUT,
                format!("the validation operation took longer than {VALIDATE_BOUND:?}"),
            )
        })
        .and_then(|validated| validated)
        .map_err(|e| op_failure(phase::VALIDATE, e))?;

    let mut warmup_completed = 0;
    if args.warmup_ms > 0 {
        let window = Window::new(
            clock.now(),
            args.warmup_ms.saturating_mul(1_000_000),
            WARMUP_DRAIN_BOUND.as_nanos() as u64,
        );
        let (warm, totals) = run_model(
            &stack,
            lanes,
            model,
            clock,
            window,
            "the warmup's drain bound",
        )
        .await
        .map_err(|e| op_failure(phase::WARMUP, e))?;
        lanes = warm;
        if let Some(failure) = window_failure(phase::WARMUP, &totals) {
            return Err(failure);
        }
        warmup_completed = totals.tally.completed;
    }
    Ok(Prepared {
        stack,
        lanes,
        connect_ns,
        warmup_completed,
    })
}

/// After `armed`: `true` on START, `false` on SHUTDOWN (or the end of stdin).
async fn wait_for_start(commands: &mut Commands) -> Result<bool, Failure> {
    match commands.next().await {
        Input::Command(Command::Start) => Ok(true),
        Input::Command(Command::Shutdown) => Ok(false),
        Input::Unknown(line) => Err(unknown_command(phase::ARMED, &line)),
    }
}

/// After `sample`: waits for SHUTDOWN (or the end of stdin); a second START is ignored.
async fn wait_for_shutdown(commands: &mut Commands) -> Result<(), Failure> {
    loop {
        match commands.next().await {
            Input::Command(Command::Shutdown) => return Ok(()),
            Input::Command(Command::Start) => {
                eprintln!("rpcarena-peer-rust: ignoring a second START; one sample per client");
            }
            Input::Unknown(line) => return Err(unknown_command(phase::SHUTDOWN, &line)),
        }
    }
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
                anyhow::anyhow!("START arrived during {phase}; it is only valid once, after `armed`"),
            )),
            Input::Unknown(line) => Err(unknown_command(phase, &line)),
        },
    }
}

fn unknown_command(phase: &'static str, line: &str) -> Failure {
    Failure::new(
        phase,
        code::PROTOCOL,
        anyhow::anyhow!("unknown command {line:?} on stdin; expected START or SHUTDOWN"),
    )
}
