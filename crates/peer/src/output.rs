//! The peer's two channels to the controller: events on stdout and commands on stdin.
//!
//! stdout carries only events, so [`emit`] is the one place that writes to it: it takes stdout's
//! lock, writes one line and flushes, so events never interleave and never sit in a buffer while
//! the controller waits for them. Diagnostics go to stderr with `eprintln!`.

use rpcarena_protocol::event::{Command, Event};
use std::io::{BufRead, Write};
use tokio::sync::mpsc;

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

/// One line from stdin, interpreted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    /// `START` or `SHUTDOWN` (end of stdin is reported as `SHUTDOWN`).
    Command(Command),
    /// Anything else, verbatim.
    Unknown(String),
}

/// Commands arriving on stdin, read by a dedicated thread so that a blocking read never holds an
/// async worker.
pub struct Commands {
    receiver: mpsc::UnboundedReceiver<Input>,
}

impl Commands {
    /// Starts the stdin reader thread.
    pub fn from_stdin() -> Commands {
        let (sender, receiver) = mpsc::unbounded_channel();
        let spawned = std::thread::Builder::new()
            .name("stdin-commands".into())
            .spawn(move || read_commands(std::io::stdin().lock(), &sender));
        if let Err(e) = spawned {
            // Without a reader we cannot hear SHUTDOWN; the closed channel below reads as one.
            eprintln!("rpcarena-peer-rust: cannot start the stdin reader thread: {e}");
        }
        Commands { receiver }
    }

    /// The next input. After end of stdin (or if the reader is gone) this is `SHUTDOWN` forever.
    pub async fn next(&mut self) -> Input {
        self.receiver
            .recv()
            .await
            .unwrap_or(Input::Command(Command::Shutdown))
    }
}

fn read_commands(input: impl BufRead, sender: &mpsc::UnboundedSender<Input>) {
    for line in input.lines() {
        let Ok(line) = line else {
            break;
        };
        if line.trim().is_empty() {
            continue;
        }
        let parsed = match Command::parse(&line) {
            Ok(command) => Input::Command(command),
            Err(_) => Input::Unknown(line),
        };
        if sender.send(parsed).is_err() {
            return;
        }
    }
    // End of stdin means SHUTDOWN (docs/peer-protocol.md), so a peer never outlives its controller.
    let _ = sender.send(Input::Command(Command::Shutdown));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stdin_lines_become_commands_and_eof_is_shutdown() {
        let (sender, mut receiver) = mpsc::unbounded_channel();
        read_commands("START\n\nfoo\n".as_bytes(), &sender);
        assert_eq!(receiver.try_recv(), Ok(Input::Command(Command::Start)));
        assert_eq!(receiver.try_recv(), Ok(Input::Unknown("foo".into())));
        assert_eq!(receiver.try_recv(), Ok(Input::Command(Command::Shutdown)));
    }
}
