//! SIGINT, SIGTERM and SIGHUP stop a run cleanly: every live peer process group is killed at
//! once, the sample in progress is recorded as failed ("interrupted"), no further sample starts,
//! and the run's artifacts and reports are still written.

use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use signal_hook::iterator::Signals;
use std::sync::atomic::{AtomicBool, Ordering};

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// Installs the handler thread (idempotent enough: a second call adds a second listener).
pub fn install() -> std::io::Result<()> {
    let mut signals = Signals::new([SIGINT, SIGTERM, SIGHUP])?;
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            for signal in signals.forever() {
                eprintln!("rpcarena: received signal {signal}; stopping peers and writing what was measured");
                INTERRUPTED.store(true, Ordering::SeqCst);
                crate::process::kill_all_groups();
            }
        })?;
    Ok(())
}

/// Whether a stop signal arrived.
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}
