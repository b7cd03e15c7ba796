//! Printing that never panics. `println!` and `eprintln!` panic when the stream is closed
//! (`rpcarena run | head -1`, a terminal that went away with SIGHUP); a closed stdout or stderr
//! is a reason to stop printing, never to stop a run that is still measuring.

use std::fmt;
use std::io::Write;

/// Writes to stdout; an error (closed pipe, full disk) is ignored.
pub fn out(args: fmt::Arguments<'_>) {
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_fmt(args).and_then(|_| stdout.flush());
}

/// Writes to stderr; an error is ignored.
pub fn err(args: fmt::Arguments<'_>) {
    let _ = std::io::stderr().lock().write_fmt(args);
}

/// `println!` that never panics.
macro_rules! say {
    ($($arg:tt)*) => { $crate::say::out(format_args!("{}\n", format_args!($($arg)*))) };
}

/// `eprintln!` that never panics.
macro_rules! tell {
    ($($arg:tt)*) => { $crate::say::err(format_args!("{}\n", format_args!($($arg)*))) };
}

pub(crate) use {say, tell};
