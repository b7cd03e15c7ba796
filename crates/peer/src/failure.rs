//! A failure that ends the peer: the `error` event it becomes and the exit code that follows.
//!
//! Every module returns its own error type ([`crate::tls::TlsError`],
//! [`crate::stacks::ListenError`], [`crate::stacks::ServerError`],
//! [`crate::commands::CommandError`], [`crate::client::ClientError`]); a [`Failure`] pairs one of
//! them ([`Cause`]) with the protocol's phase and code at the place the peer gives up. An error's
//! `Display` says only its own part and its cause is its `source()`; the `error` event's message
//! is the whole chain on one line ([`chain`]: "outer: inner: cause").

use crate::client::ClientError;
use crate::commands::CommandError;
use crate::stacks::{ListenError, ServerError};
use crate::tls::TlsError;
use rpcarena_protocol::event::{Event, PeerError, code, phase};
use std::error::Error;

/// Something the peer cannot go on after, with the protocol's phase and code.
///
/// `Display` holds the whole chain of `error`, so `error` is not also its `source()` (a reader of
/// the chain would print it twice).
#[derive(Debug, thiserror::Error)]
#[error("{code} error during {phase}: {}", chain(.error))]
pub struct Failure {
    /// One of [`rpcarena_protocol::event::phase`].
    pub phase: &'static str,
    /// One of [`rpcarena_protocol::event::code`].
    pub code: &'static str,
    /// What failed.
    pub error: Cause,
}

/// What failed, by the module that found it.
#[derive(Debug, thiserror::Error)]
pub enum Cause {
    /// The TLS configuration cannot be built from `--cert`/`--key` or `--ca`.
    #[error(transparent)]
    Tls(#[from] TlsError),
    /// The server cannot listen on `--listen`.
    #[error(transparent)]
    Listen(#[from] ListenError),
    /// The running server stopped on its own.
    #[error(transparent)]
    Server(#[from] ServerError),
    /// A line on stdin out of place.
    #[error(transparent)]
    Command(#[from] CommandError),
    /// The client's connection, validation, warmup, window or conformance probe failed.
    #[error(transparent)]
    Client(#[from] ClientError),
    /// The async runtime cannot start.
    #[error(transparent)]
    Runtime(std::io::Error),
    /// Anything else, said in one sentence (e.g. a stack that cannot run as configured).
    #[error("{0}")]
    Other(String),
}

impl From<String> for Cause {
    fn from(message: String) -> Cause {
        Cause::Other(message)
    }
}

impl Failure {
    /// A failure in `phase` with `code`.
    pub fn new(phase: &'static str, code: &'static str, error: impl Into<Cause>) -> Self {
        Failure {
            phase,
            code,
            error: error.into(),
        }
    }

    /// The `error` event to print.
    pub fn event(&self) -> Event {
        Event::Error(PeerError {
            phase: self.phase.to_string(),
            code: self.code.to_string(),
            message: chain(&self.error),
        })
    }

    /// 2 for wrong arguments at startup (docs/peer-protocol.md), 1 for everything else.
    pub fn exit_code(&self) -> u8 {
        if self.phase == phase::STARTUP && self.code == code::CONFIG {
            2
        } else {
            1
        }
    }
}

/// `error` and its sources on one line, outer first, joined by ": ".
pub fn chain(error: &(dyn Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// `result.fail(phase, code)`: attaches the protocol's phase and code to a module's error.
pub trait FailExt<T> {
    /// Turns the error into a [`Failure`].
    fn fail(self, phase: &'static str, code: &'static str) -> Result<T, Failure>;
}

impl<T, E: Into<Cause>> FailExt<T> for Result<T, E> {
    fn fail(self, phase: &'static str, code: &'static str) -> Result<T, Failure> {
        self.map_err(|e| Failure::new(phase, code, e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stacks::{ListenError, ResolveError};

    #[test]
    fn the_message_is_the_whole_chain_once() {
        let failure = Failure::new(
            phase::LISTEN,
            code::CONFIG,
            ListenError::Resolve(ResolveError::Lookup {
                host_port: "nowhere.invalid:1".into(),
                source: std::io::Error::other("Name or service not known"),
            }),
        );
        let message = "--listen: cannot resolve nowhere.invalid:1: Name or service not known";
        let Event::Error(error) = failure.event() else {
            panic!("an error event");
        };
        assert_eq!(error.message, message);
        assert_eq!(
            failure.to_string(),
            format!("config error during listen: {message}")
        );
        assert_eq!(failure.exit_code(), 1);
    }
}
