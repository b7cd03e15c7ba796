//! Commands on stdin, the controller's channel to the peer (docs/peer-protocol.md, "Lifecycle"):
//! `START`, `SHUTDOWN` and (a server's, revision 1.2) `WINDOW START` and `WINDOW END`, one a
//! line; the end of stdin means `SHUTDOWN`. The peer answers on stdout (crate::events).

use rpcarena_protocol::event::Command;
use std::io::BufRead;
use tokio::sync::mpsc;

/// One line from stdin, interpreted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    /// `START`, `SHUTDOWN`, `WINDOW START` or `WINDOW END` (end of stdin is reported as
    /// `SHUTDOWN`).
    Command(Command),
    /// Anything else, verbatim.
    Unknown(String),
}

/// A line on stdin out of place (docs/peer-protocol.md, "Lifecycle"), an error in the phase it
/// arrives in with code `protocol`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CommandError {
    /// A client got START before `armed` or during its window.
    #[error("START arrived during {phase}; it is only valid once, after `armed`")]
    EarlyStart {
        /// The phase it arrived in.
        phase: &'static str,
    },
    /// A client got a second START after its sample.
    #[error(
        "a second START after the sample; a client measures one sample, then takes only SHUTDOWN"
    )]
    SecondStart,
    /// A client got a line that is neither START nor SHUTDOWN.
    #[error("unknown command {line:?} on stdin; expected START or SHUTDOWN")]
    Unknown {
        /// The line, verbatim.
        line: String,
    },
    /// A client got `WINDOW START` or `WINDOW END`, which are a server's commands: the same
    /// protocol error as any other line.
    #[error("{command} is a server command (revision 1.2); a client takes only START and SHUTDOWN")]
    WindowToClient {
        /// The command's line.
        command: &'static str,
    },
    /// A server got START, which is a client's command.
    #[error("START is a client command; a server takes SHUTDOWN, WINDOW START and WINDOW END")]
    StartToServer,
    /// A server got a line that is no command.
    #[error(
        "unknown command {line:?} on stdin; a server takes SHUTDOWN, WINDOW START and WINDOW END"
    )]
    UnknownToServer {
        /// The line, verbatim.
        line: String,
    },
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
        read_commands(
            "START\n\nfoo\n WINDOW START \nWINDOW END\nWINDOW  END\n".as_bytes(),
            &sender,
        );
        assert_eq!(receiver.try_recv(), Ok(Input::Command(Command::Start)));
        assert_eq!(receiver.try_recv(), Ok(Input::Unknown("foo".into())));
        assert_eq!(
            receiver.try_recv(),
            Ok(Input::Command(Command::WindowStart))
        );
        assert_eq!(receiver.try_recv(), Ok(Input::Command(Command::WindowEnd)));
        assert_eq!(
            receiver.try_recv(),
            Ok(Input::Unknown("WINDOW  END".into()))
        );
        assert_eq!(receiver.try_recv(), Ok(Input::Command(Command::Shutdown)));
    }
}
