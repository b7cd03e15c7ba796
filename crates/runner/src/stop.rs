//! Stopping a run from outside: the binary's signal handler calls [`interrupt`], which kills
//! every live peer process group at once and tells the run not to start another sample. The
//! sample in progress is then recorded as failed ("interrupted by SIGTERM ..."), and the run's
//! artifacts and reports are still written.
//!
//! This module only holds the flag and the signal that set it; installing signal handlers is
//! the binary's business.

use nix::sys::signal::Signal;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

static INTERRUPTED: AtomicBool = AtomicBool::new(false);
/// The first signal that stopped the run (0: none yet).
static SIGNAL: AtomicI32 = AtomicI32::new(0);

/// Stops the run for `signal`: kills every live peer process group and marks the run
/// interrupted. Safe to call from a signal-handling thread, and more than once (the first
/// signal is the one reported).
pub fn interrupt(signal: i32) {
    let _ = SIGNAL.compare_exchange(0, signal, Ordering::SeqCst, Ordering::SeqCst);
    // The flag is set before any peer dies: whoever sees a peer's death caused by this stop can
    // tell it from a peer's own failure by reading the flag.
    INTERRUPTED.store(true, Ordering::SeqCst);
    crate::process::kill_all_groups();
}

/// Whether [`interrupt`] was called.
pub(crate) fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

/// The signal that stopped the run, named ("SIGTERM"), once [`interrupt`] was called.
pub fn stopping_signal() -> Option<String> {
    interrupted().then(|| signal_name(SIGNAL.load(Ordering::SeqCst)))
}

/// "SIGTERM", or "signal 77" for a number without a name.
pub fn signal_name(signal: i32) -> String {
    Signal::try_from(signal).map_or_else(|_| format!("signal {signal}"), |s| s.as_str().into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signals_are_named() {
        assert_eq!(signal_name(15), "SIGTERM");
        assert_eq!(signal_name(2), "SIGINT");
        assert_eq!(signal_name(0), "signal 0");
    }
}
