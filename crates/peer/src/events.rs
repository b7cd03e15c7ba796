//! Events on stdout, the peer's channel to the controller (its commands arrive on stdin,
//! crate::commands; the events themselves are defined in `rpcarena_protocol::event`).
//!
//! stdout carries only events, so [`emit`] is the one place that writes to it: it takes stdout's
//! lock, writes one line and flushes, so events never interleave and never sit in a buffer while
//! the controller waits for them. Diagnostics go to stderr with `eprintln!`.

use rpcarena_protocol::event::Event;
use std::io::Write;

/// Writes one event as one line of JSON on stdout and flushes it.
///
/// If stdout is gone the controller is gone, and a peer without a controller must not run on:
/// the process exits with code 1.
pub fn emit(event: &Event) {
    let line = event.to_line();
    let mut stdout = std::io::stdout().lock();
    let written = stdout
        .write_all(line.as_bytes())
        .and_then(|()| stdout.write_all(b"\n"))
        .and_then(|()| stdout.flush());
    if let Err(e) = written {
        eprintln!(
            "rpcarena-peer-rust: cannot write the {} event to stdout ({e}); the controller is gone, exiting",
            event.name()
        );
        std::process::exit(1);
    }
}
