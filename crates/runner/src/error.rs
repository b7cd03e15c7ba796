//! The runner's error: one enum its callers can match on (a campaign that is wrong, one that
//! cannot run here, a run directory that cannot be used, a full disk...), each variant with the
//! text that says what, where and what to do. The cause, when there is one, is the error's
//! `source()`, so `{:#}` through anyhow prints the whole chain and the message never repeats it.

use rpcarena_model::campaign::CampaignError;
use rpcarena_netem::NetemError;
use std::path::{Path, PathBuf};

/// What went wrong in the runner.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The campaign text is wrong (syntax or meaning).
    #[error(transparent)]
    Campaign(#[from] CampaignError),
    /// The campaign is well formed but cannot run here: every problem found, one per line,
    /// each naming the file and field (peers, capabilities, the host's network).
    #[error("{}", .0.join("\n"))]
    NotRunnable(Vec<String>),
    /// `--cell` names a cell the campaign does not have.
    #[error("--cell {cell:?}: no such cell in {origin}; cells are: {}", known.join(", "))]
    UnknownCell {
        /// The cell asked for.
        cell: String,
        /// The campaign file.
        origin: String,
        /// The cells it has.
        known: Vec<String>,
    },
    /// The output directory cannot hold this run (exists and is not empty, a dangling link...).
    #[error("{0}")]
    RunDirectory(String),
    /// `--resume` is refused: what changed or is missing, and what to do instead.
    #[error("{0}")]
    Resume(String),
    /// `rpcarena profile` cannot run what was asked (no such configuration, several to choose).
    #[error("{0}")]
    Probe(String),
    /// A file or directory could not be read, written, created, moved or removed.
    #[error("{action} {}", path.display())]
    File {
        /// What was being done ("writing", "creating output directory", ...).
        action: &'static str,
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A JSON artifact could not be written, or one on disk could not be read back.
    #[error("{what}")]
    Json {
        /// Which artifact, and where.
        what: String,
        /// Why.
        #[source]
        source: serde_json::Error,
    },
    /// A sample record could not be appended to `samples.jsonl`; the records before it are
    /// whole (or, if `torn`, the last line is cut and `rpcarena report` skips it).
    #[error("{}", append_message(.sample, .path, *.disk_full, .torn.as_deref(), .error))]
    Append {
        /// The sample's id.
        sample: String,
        /// `samples.jsonl`.
        path: PathBuf,
        /// The disk is full: free space and run the remaining samples again (`--resume`).
        disk_full: bool,
        /// Cutting the partial record off failed too: why.
        torn: Option<String>,
        /// The write's error (in the message, not a `source()`: the message says it mid-sentence).
        error: std::io::Error,
    },
    /// The campaign's certificates could not be made.
    #[error("{what}")]
    Certificate {
        /// Which certificate or key.
        what: String,
        /// Why.
        #[source]
        source: rcgen::Error,
    },
    /// A peer process could not be started, or its stdin written.
    #[error("{what}")]
    Peer {
        /// Which peer, doing what.
        what: String,
        /// Why, when the system said.
        #[source]
        source: Option<std::io::Error>,
    },
    /// The campaign's network could not be set up.
    #[error("setting up the campaign's network")]
    Network(#[source] NetemError),
    /// The campaign's network section cannot be turned into a link (checked in `prepare`; seen
    /// here only when `run` is given a campaign that was not).
    #[error("network: {0}")]
    NetworkConfig(String),
}

impl Error {
    /// The message and every cause after it: see [`chain`].
    pub fn chain(&self) -> String {
        chain(self)
    }
}

/// An error's message and every cause after it, joined by ": " (what `{:#}` prints through
/// anyhow): the text for a record's or a log's one line.
pub fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(e) = cause {
        text.push_str(": ");
        text.push_str(&e.to_string());
        cause = e.source();
    }
    text
}

/// The runner's result.
pub type Result<T, E = Error> = std::result::Result<T, E>;

fn append_message(
    sample: &str,
    path: &Path,
    disk_full: bool,
    torn: Option<&str>,
    error: &std::io::Error,
) -> String {
    let kept = match torn {
        None => "the records before it are kept whole".to_string(),
        Some(e) => format!(
            "cutting the partial record off failed too ({e}): the last line of the file is \
             torn, and `rpcarena report` skips it"
        ),
    };
    if disk_full {
        format!(
            "disk full: sample {sample} could not be appended to {} ({error}); {kept}. Free \
             some space and run the remaining samples again",
            path.display()
        )
    } else {
        format!(
            "appending sample {sample} to {}: {error}; {kept}",
            path.display()
        )
    }
}

/// Names the file an I/O error is about, as [`Error::File`].
pub trait FileContext<T> {
    /// `action` is what was being done to `path` ("writing", "listing").
    fn file(self, action: &'static str, path: &Path) -> Result<T>;
}

impl<T> FileContext<T> for std::io::Result<T> {
    fn file(self, action: &'static str, path: &Path) -> Result<T> {
        self.map_err(|source| Error::File {
            action,
            path: path.to_path_buf(),
            source,
        })
    }
}

/// Names the artifact a JSON error is about, as [`Error::Json`].
pub(crate) trait JsonContext<T> {
    /// `what` says which artifact, doing what.
    fn json(self, what: impl FnOnce() -> String) -> Result<T>;
}

impl<T> JsonContext<T> for serde_json::Result<T> {
    fn json(self, what: impl FnOnce() -> String) -> Result<T> {
        self.map_err(|source| Error::Json {
            what: what(),
            source,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_error_names_the_action_and_the_path_and_keeps_its_cause() {
        let e = std::fs::read("/nonexistent/rpcarena")
            .file("reading", Path::new("/nonexistent/rpcarena"))
            .unwrap_err();
        assert_eq!(e.to_string(), "reading /nonexistent/rpcarena");
        let cause = std::error::Error::source(&e).expect("the io error is the source");
        assert!(cause.to_string().contains("No such file"), "{cause}");
        assert!(matches!(
            e,
            Error::File {
                action: "reading",
                ..
            }
        ));
        assert!(
            e.chain()
                .starts_with("reading /nonexistent/rpcarena: No such file"),
            "{}",
            e.chain()
        );
    }

    #[test]
    fn a_full_disk_says_so_and_what_to_do() {
        let e = Error::Append {
            sample: "s1".into(),
            path: PathBuf::from("/r/samples.jsonl"),
            disk_full: true,
            torn: None,
            error: std::io::Error::from_raw_os_error(28),
        };
        let text = e.to_string();
        assert!(text.starts_with("disk full: sample s1"), "{text}");
        assert!(
            text.contains("the records before it are kept whole"),
            "{text}"
        );
        assert!(text.contains("Free some space"), "{text}");
        let torn = Error::Append {
            sample: "s1".into(),
            path: PathBuf::from("/r/samples.jsonl"),
            disk_full: false,
            torn: Some("EIO".into()),
            error: std::io::Error::from_raw_os_error(5),
        };
        assert!(torn.to_string().contains("torn"), "{torn}");
    }
}
