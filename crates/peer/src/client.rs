//! `client`: connect, validate one operation, warm up, `armed`, START, the admission window,
//! `sample`, SHUTDOWN, `stopped` (docs/peer-protocol.md, "armed" and "sample").

use crate::args::{ClientArgs, Load, Stack};
use crate::engine::tally::Totals;
use crate::engine::{Clock, Lane, LoadModel, MonotonicClock, OpError, Window, run_window};
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
        },
        lanes: args.concurrency,
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

async fn sample<S: ClientStack>(
    args: &ClientArgs,
    settings: &ClientSettings,
    mut commands: Commands,
) -> Result<(), Failure> {
    let model = match args.load {
        Load::Closed => LoadModel::Closed,
    };
    let clock = MonotonicClock::new();

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
        let (warm, totals) = run_window(lanes, model, clock, window, "the warmup's drain bound")
            .await
            .map_err(|e| op_failure(phase::WARMUP, e))?;
        lanes = warm;
        if let Some(failure) = window_failure(phase::WARMUP, &totals) {
            return Err(failure);
        }
        warmup_completed = totals.tally.completed;
    }

    emit(&Event::Armed(Armed {
        lanes: args.concurrency,
        connections: stack.connections(),
        connect_ns: Some(connect_ns),
        warmup_completed,
    }));

    match commands.next().await {
        Input::Command(Command::Start) => {}
        Input::Command(Command::Shutdown) => {
            // The controller gave up before measuring: close cleanly, no sample.
            stack.close(lanes).await;
            emit(&Event::Stopped(Stopped::default()));
            return Ok(());
        }
        Input::Unknown(line) => return Err(unknown_command(phase::ARMED, &line)),
    }

    let window = Window::new(
        clock.now(),
        args.window_ms.saturating_mul(1_000_000),
        args.drain_ms.saturating_mul(1_000_000),
    );
    let (lanes, totals) = run_window(lanes, model, clock, window, "the drain bound (--drain-ms)")
        .await
        .map_err(|e| op_failure(phase::MEASURE, e))?;
    let report = totals
        .report(&window)
        .map_err(|e| Failure::new(phase::MEASURE, code::INTERNAL, e))?;
    emit(&Event::Sample(report));

    loop {
        match commands.next().await {
            Input::Command(Command::Shutdown) => break,
            Input::Command(Command::Start) => {
                eprintln!("rpcarena-peer-rust: ignoring a second START; one sample per client");
            }
            Input::Unknown(line) => return Err(unknown_command(phase::SHUTDOWN, &line)),
        }
    }
    stack.close(lanes).await;
    emit(&Event::Stopped(Stopped::default()));
    Ok(())
}

fn unknown_command(phase: &'static str, line: &str) -> Failure {
    Failure::new(
        phase,
        code::PROTOCOL,
        anyhow::anyhow!("unknown command {line:?} on stdin; expected START or SHUTDOWN"),
    )
}
