//! The kit's error: what stopped the kit itself (not a check that failed: those are rows).

/// Why the kit could not run its checks.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The reference partner (the Rust peer) did not answer its capabilities query: no check
    /// can be judged against it. Build it (`cargo build --bins`) and run the kit again.
    #[error("the partner {id} (the kit's reference partner): {reason}")]
    Reference {
        /// The partner's id.
        id: String,
        /// What its capabilities query said.
        reason: String,
    },
    /// The runner failed beneath the kit (certificates, a peer process, a sample run's
    /// artifacts), or the kit's own files could not be written (`runner::Error::File`).
    #[error(transparent)]
    Runner(#[from] rpcarena_runner::Error),
}

impl Error {
    /// The message and every cause after it, joined by ": ".
    pub fn chain(&self) -> String {
        rpcarena_runner::error_chain(self)
    }
}

/// The kit's result.
pub type Result<T, E = Error> = std::result::Result<T, E>;
