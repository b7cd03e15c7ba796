//! Why netcheck (or one of its phases) could not measure.

use rpcarena_netem::NetemError;
use rpcarena_netem_core::ProfileError;

/// Anything that stops netcheck or one of its phases.
#[derive(Debug, thiserror::Error)]
pub enum NetcheckError {
    /// The profile cannot be emulated.
    #[error(transparent)]
    Profile(#[from] ProfileError),
    /// The topology could not be built, checked or removed.
    #[error(transparent)]
    Netem(#[from] NetemError),
    /// A measurement could not run.
    #[error("netcheck phase `{phase}` failed: {detail}")]
    Phase {
        /// Phase name.
        phase: String,
        /// What went wrong.
        detail: String,
    },
    /// A socket could not be opened.
    #[error("{what}: {source}")]
    Io {
        /// What was being done, with the address and namespace.
        what: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// A probe thread panicked.
    #[error("a netcheck thread panicked while {what}")]
    ThreadPanicked {
        /// What the thread was doing.
        what: String,
    },
}
