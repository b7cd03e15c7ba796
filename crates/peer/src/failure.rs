//! A failure that ends the peer: the `error` event it becomes and the exit code that follows.

use rpcarena_protocol::event::{Event, PeerError, code, phase};
use std::fmt;

/// Something the peer cannot go on after, with the protocol's phase and code.
#[derive(Debug)]
pub struct Failure {
    /// One of [`rpcarena_protocol::event::phase`].
    pub phase: &'static str,
    /// One of [`rpcarena_protocol::event::code`].
    pub code: &'static str,
    /// What failed, with its context chain.
    pub error: anyhow::Error,
}

impl Failure {
    /// A failure in `phase` with `code`.
    pub fn new(phase: &'static str, code: &'static str, error: impl Into<anyhow::Error>) -> Self {
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
            // `{:#}` prints anyhow's whole context chain on one line: "outer: inner: cause".
            message: format!("{:#}", self.error),
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

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} error during {}: {:#}",
            self.code, self.phase, self.error
        )
    }
}

/// `result.fail(phase, code)`: attaches the protocol's phase and code to any error.
pub trait FailExt<T> {
    /// Turns the error into a [`Failure`].
    fn fail(self, phase: &'static str, code: &'static str) -> Result<T, Failure>;
}

impl<T, E: Into<anyhow::Error>> FailExt<T> for Result<T, E> {
    fn fail(self, phase: &'static str, code: &'static str) -> Result<T, Failure> {
        self.map_err(|e| Failure::new(phase, code, e))
    }
}
