//! Folding and drawing, both through the maintained `inferno` crate: `perf script` text to
//! folded stacks (its `collapse::perf`), folded stacks to a self-contained, searchable SVG flame
//! graph (its `flamegraph`, whose SVG carries its own search script).

use inferno::collapse::Collapse;
use inferno::collapse::perf::{Folder, Options as FoldOptions};
use inferno::flamegraph::{self, Options as GraphOptions};

/// `perf script` text folded into `frame;frame;leaf count` lines, one per distinct stack,
/// outermost frame first (the thread's name as the root).
pub fn fold(script: &[u8]) -> std::io::Result<String> {
    let mut options = FoldOptions::default();
    options.nthreads = 1;
    let mut out = Vec::new();
    Folder::from(options).collapse(script, &mut out)?;
    String::from_utf8(out).map_err(std::io::Error::other)
}

/// The sum of a folded file's counts.
pub fn total(folded: &str) -> u64 {
    folded
        .lines()
        .filter_map(|l| l.rsplit_once(' '))
        .filter_map(|(_, n)| n.trim().parse::<u64>().ok())
        .sum()
}

/// A flame graph of `folded` as SVG: `title` on top, `subtitle` under it, counts named
/// `count_name` (`samples`, `us`).
pub fn flamegraph(
    folded: &str,
    title: &str,
    subtitle: &str,
    count_name: &str,
) -> std::io::Result<Vec<u8>> {
    let mut options = GraphOptions::default();
    options.title = title.to_string();
    options.subtitle = Some(subtitle.to_string());
    options.count_name = count_name.to_string();
    options.deterministic = true;
    let mut svg = Vec::new();
    flamegraph::from_lines(&mut options, folded.lines(), &mut svg)?;
    Ok(svg)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCRIPT: &str = "\
peer 10 1.000001: cpu-clock:
\t    1000 serve (/x/peer)
\t    2000 main (/x/peer)

peer 10 1.000002: cpu-clock:
\t    1000 serve (/x/peer)
\t    2000 main (/x/peer)

peer 11 1.000003: cpu-clock:
\t    3000 recv (/lib/libc.so.6)
\t    2000 main (/x/peer)
";

    #[test]
    fn folding_keeps_every_sample_and_the_graph_is_svg() {
        let folded = fold(SCRIPT.as_bytes()).unwrap();
        assert_eq!(total(&folded), 3, "{folded}");
        assert!(folded.contains("main;serve 2"), "{folded}");
        let svg = flamegraph(&folded, "t", "s", "samples").unwrap();
        let text = String::from_utf8(svg).unwrap();
        assert!(text.contains("<svg"));
        assert!(text.contains("serve"));
    }
}
