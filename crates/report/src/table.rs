//! Markdown tables of lines already rendered: the header, its alignment row, the lines, and a
//! blank line after.

use std::fmt::Write;

/// Writes a table of `lines` under `header` (`| a | b |`) and `alignment` (`|---|--:|`).
pub(crate) fn write(out: &mut String, header: &str, alignment: &str, lines: &[String]) {
    let _ = writeln!(out, "{header}\n{alignment}");
    for line in lines {
        let _ = writeln!(out, "{line}");
    }
    out.push('\n');
}
