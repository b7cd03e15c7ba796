//! `rpcarena-peer-rust`: the Rust peer of rpcarena (peer protocol v1, revision 1.1,
//! docs/peer-protocol.md).
//!
//! ```text
//! rpcarena-peer-rust capabilities
//! rpcarena-peer-rust server --stack grpc|quic|tcp --listen HOST:PORT --cert FILE --key FILE
//! rpcarena-peer-rust client --stack S --server HOST:PORT --server-name NAME --ca FILE
//!     --shape SHAPE --concurrency N --request-size B --response-size B
//!     --messages-per-stream N --load closed --warmup-ms MS --window-ms MS --drain-ms MS
//! ```
//!
//! main is the pipeline: arguments -> command -> (runtime) -> exit code. stdout carries only
//! events (crate::events), so every failure ends as one `error` event and a non-zero exit.

use rpcarena_peer_rust::args::{self, ArgError, Command};
use rpcarena_peer_rust::failure::{Cause, FailExt, Failure};
use rpcarena_peer_rust::{capabilities, client, events, server};
use rpcarena_protocol::event::{Event, PeerError, code, phase};
use std::process::ExitCode;

fn main() -> ExitCode {
    let command = match args::parse(std::env::args_os()) {
        Ok(command) => command,
        Err(ArgError::Info(text)) => {
            eprint!("{text}");
            return ExitCode::SUCCESS;
        }
        Err(ArgError::Invalid(message)) => {
            events::emit(&Event::Error(PeerError {
                phase: phase::STARTUP.to_string(),
                code: code::CONFIG.to_string(),
                message,
            }));
            return ExitCode::from(2);
        }
    };
    let result = match command {
        Command::Capabilities => {
            events::emit(&capabilities::event());
            Ok(())
        }
        Command::Server(args) => runtime().and_then(|rt| rt.block_on(server::run(args))),
        Command::Client(args) => runtime().and_then(|rt| rt.block_on(client::run(args))),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => {
            eprintln!("rpcarena-peer-rust: {failure}");
            events::emit(&failure.event());
            ExitCode::from(failure.exit_code())
        }
    }
}

/// The tokio multi-thread runtime, one worker per CPU (docs/stacks.md, "Runtime").
fn runtime() -> Result<tokio::runtime::Runtime, Failure> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(rpcarena_peer_rust::stacks::runtime_workers())
        .enable_all()
        .thread_name("rpcarena-worker")
        .build()
        .map_err(Cause::Runtime)
        .fail(phase::STARTUP, code::INTERNAL)
}
