//! `server`: load TLS, bind, print `ready`, serve until SHUTDOWN (or end of stdin), print
//! `stopped` with the counters and the transport statistics of every connection it served.

use crate::args::{ServerArgs, Stack};
use crate::commands::{CommandError, Commands, Input};
use crate::events::emit;
use crate::failure::{FailExt, Failure};
use crate::stacks::{self, ListenError, RunningServer, ServerState, Stall, resolve};
use crate::tls;
use crate::transport::ServerPoller;
use rpcarena_protocol::event::{Command, Event, Ready, Role, Stopped, TransportStats, code, phase};
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
    let refused = serve_until_shutdown(&mut commands, &mut server).await?;
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
/// or until the server fails.
async fn serve_until_shutdown(
    commands: &mut Commands,
    server: &mut RunningServer,
) -> Result<Option<CommandError>, Failure> {
    // A server's only command is SHUTDOWN (or the end of stdin); START is a client's, so a
    // controller that sends it here is confused, and so is any other line (docs/peer-protocol.md,
    // "Lifecycle").
    tokio::select! {
        input = commands.next() => Ok(match input {
            Input::Command(Command::Shutdown) => None,
            Input::Command(Command::Start) => Some(CommandError::StartToServer),
            Input::Unknown(line) => Some(CommandError::UnknownToServer { line }),
        }),
        error = server.failed() => Err(Failure::new(phase::SERVE, code::INTERNAL, error)),
    }
}

/// The `stopped` event: the server's counters and its transport statistics.
fn stopped(state: &ServerState, transport: Option<Box<TransportStats>>) -> Event {
    let (rpcs, requests, responses, rejected) = state.counters.snapshot();
    Event::Stopped(Stopped {
        counters: BTreeMap::from([
            ("rpcs".to_string(), rpcs),
            ("requests".to_string(), requests),
            ("responses".to_string(), responses),
            ("rejected".to_string(), rejected),
        ]),
        transport,
    })
}
