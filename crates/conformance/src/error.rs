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
    /// `--jobs` above 1 with the `sample` group, whose timed samples need the CPUs alone.
    #[error(
        "--jobs {jobs} checks several stacks at once, which the sample group's timed samples cannot share the CPUs with: run the sample group with --jobs 1, or name the other groups with --group"
    )]
    Jobs {
        /// The jobs asked for.
        jobs: usize,
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
