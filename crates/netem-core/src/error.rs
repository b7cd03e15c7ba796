//! Why a profile cannot be emulated as written. Every message names the field, the value and
//! what would be accepted.

/// A profile or direction spec that cannot be emulated as written.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ProfileError {
    /// A field holds a value outside the range netem (or common sense) accepts.
    #[error("network profile field `{field}` is {value}, expected {expected}")]
    OutOfRange {
        /// Dotted path of the field, e.g. `client_to_server.loss.probability`.
        field: String,
        /// The offending value as written.
        value: String,
        /// What would have been accepted.
        expected: String,
    },
    /// `reorder` was asked for on a direction without delay; netem refuses that too.
    #[error(
        "network profile field `{field}` asks for reordering without a delay; netem reorders by \
         letting some packets skip the delay, so set delay_ns > 0 or remove reorder"
    )]
    ReorderWithoutDelay {
        /// Dotted path of the `reorder` field.
        field: String,
    },
    /// No profile has this name.
    #[error("unknown network profile `{name}`; known profiles: {known}")]
    UnknownProfile {
        /// The name asked for.
        name: String,
        /// Comma-separated known names.
        known: String,
    },
}
