//! Stopping a run from outside: the binary's signal handler calls [`interrupt`], which kills
//! every live peer process group at once and tells the run not to start another sample. The
//! sample in progress is then recorded as failed ("interrupted"), and the run's artifacts and
//! reports are still written.
//!
//! This module only holds the flag; installing signal handlers is the binary's business.

use std::sync::atomic::{AtomicBool, Ordering};

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// Stops the run: kills every live peer process group and marks the run interrupted. Safe to
/// call from a signal-handling thread, and more than once.
pub fn interrupt() {
    INTERRUPTED.store(true, Ordering::SeqCst);
    crate::process::kill_all_groups();
}

/// Whether [`interrupt`] was called.
pub(crate) fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}
