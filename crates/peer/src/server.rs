//! `server`: load TLS, bind, print `ready`, serve until SHUTDOWN (or end of stdin), answering
//! `WINDOW START` and `WINDOW END` with a `window` event (revision 1.2), and print `stopped` with
//! the counters, the allocations of its whole life and the transport statistics of every
//! connection it served.

use crate::allocations;
use crate::args::{ServerArgs, Stack};
use crate::commands::{CommandError, Commands, Input};
use crate::events::emit;
use crate::failure::{FailExt, Failure};
use crate::stacks::{self, ListenError, RunningServer, ServerState, Stall, resolve};
use crate::tls;
use crate::transport::ServerPoller;
use rpcarena_protocol::event::{
    Command, Edge, Event, Ready, Role, Stopped, TransportStats, WindowReport, code, phase,
};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// How long closing connections may take after SHUTDOWN.
const STOP_GRACE: Duration = Duration::from_secs(3);

/// Runs the server until SHUTDOWN.
pub async fn run(args: ServerArgs) -> Result<(), Failure> {
    let config = tls::server_config(&args.cert, &args.key, tls::alpn(args.stack))
        .fail(phase::STARTUP, code::CONFIG)?;
    let config = Arc::new(config);
    let mut commands = Commands::from_stdin();
    let addr = resolve(&args.listen)
        .await
        .map_err(ListenError::Resolve)
        .fail(phase::LISTEN, code::CONFIG)?;
    if let Some(fault) = args.conformance_fault {
        eprintln!(
            "rpcarena-peer-rust: CONFORMANCE FAULT {}: this server misbehaves on every call on \
             purpose; never measure with it",
            fault.name()
        );
    }
    let state = Arc::new(ServerState {
        stall: stall(&args),
        fault: args.conformance_fault,
        ..ServerState::default()
    });
    let mut server = match args.stack {
        Stack::Grpc => stacks::grpc::serve(addr, config, state.clone()).await?,
        Stack::Quic => stacks::quic::serve(addr, config, state.clone()).await?,
        Stack::Tcp => stacks::tcp::serve(addr, config, state.clone()).await?,
    };
    // The server's transport statistics from here to SHUTDOWN (docs/peer-protocol.md,
    // "Transport statistics").
    let transport = match args.stack {
        Stack::Quic => "quic",
        Stack::Grpc | Stack::Tcp => "tcp",
    };
    let poller = ServerPoller::start(transport, state.connections.clone());
    emit(&Event::Ready(Ready {
        role: Role::Server,
        address: server.local_addr.to_string(),
        pid: std::process::id(),
    }));
    let refused = serve_until_shutdown(&mut commands, &mut server, &state).await?;
    // Read at SHUTDOWN, and let go of the connections before the server closes them.
    let transport = poller.finish().map(Box::new);
    server.stop(STOP_GRACE).await;
    if let Some(refused) = refused {
        return Err(Failure::new(phase::SERVE, code::PROTOCOL, refused));
    }
    emit(&stopped(&state, transport));
    Ok(())
}

/// The diagnostic stall of `--stall-every-ms`/`--stall-ms`, announced on stderr, if both are set.
fn stall(args: &ServerArgs) -> Option<Stall> {
    let (Some(every), Some(length)) = (args.stall_every_ms, args.stall_ms) else {
        return None;
    };
    eprintln!(
        "rpcarena-peer-rust: diagnostic stalls: every {every} ms the server holds every response for {length} ms"
    );
    Some(Stall {
        epoch: std::time::Instant::now(),
        every: Duration::from_millis(every),
        length: Duration::from_millis(length),
    })
}

/// Serves until stdin says SHUTDOWN (`None`) or something else (`Some`, what was wrong with it),
/// or until the server fails. `WINDOW START` and `WINDOW END` are answered at once with a
/// `window` event, any number of them in any order (the controller checks them).
async fn serve_until_shutdown(
    commands: &mut Commands,
    server: &mut RunningServer,
    state: &ServerState,
) -> Result<Option<CommandError>, Failure> {
    // START is a client's command, so a controller that sends it here is confused, and so is
    // any other line (docs/peer-protocol.md, "Lifecycle").
    loop {
        tokio::select! {
            input = commands.next() => match input {
                Input::Command(Command::Shutdown) => return Ok(None),
                Input::Command(Command::Start) => return Ok(Some(CommandError::StartToServer)),
                Input::Command(Command::WindowStart) => emit(&window(state, Edge::Start)),
                Input::Command(Command::WindowEnd) => emit(&window(state, Edge::End)),
                Input::Unknown(line) => return Ok(Some(CommandError::UnknownToServer { line })),
            },
            error = server.failed() => {
                return Err(Failure::new(phase::SERVE, code::INTERNAL, error));
            }
        }
    }
}

/// The server's counters so far, as `stopped` and `window` report them.
fn counters(state: &ServerState) -> BTreeMap<String, u64> {
    let (rpcs, requests, responses, rejected) = state.counters.snapshot();
    BTreeMap::from([
        ("rpcs".to_string(), rpcs),
        ("requests".to_string(), requests),
        ("responses".to_string(), responses),
        ("rejected".to_string(), rejected),
    ])
}

/// The `window` event answering the command of `edge`: the counters and the process's
/// allocations so far.
fn window(state: &ServerState, edge: Edge) -> Event {
    let allocated = allocations::snapshot();
    Event::Window(WindowReport {
        edge,
        counters: counters(state),
        allocations: Some(allocated.count),
        allocated_bytes: Some(allocated.bytes),
        first_rejection: None,
    })
}

/// The `stopped` event: the server's counters, its allocations over its whole life and its
/// transport statistics.
fn stopped(state: &ServerState, transport: Option<Box<TransportStats>>) -> Event {
    let allocated = allocations::snapshot();
    Event::Stopped(Stopped {
        counters: counters(state),
        transport,
        allocations: Some(allocated.count),
        allocated_bytes: Some(allocated.bytes),
        first_rejection: None,
    })
}
