//! The link emulator: a pure netem-exact core driven by virtual time, and link profiles.
//!
//! The I/O shell and netcheck follow in later modules.

pub mod core;
pub mod error;
pub mod profile;
