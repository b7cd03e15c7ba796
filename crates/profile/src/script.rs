//! `perf script` text, parsed: one [`Sample`] per event, its frames leaf first.
//!
//! The shell asks for the fields `comm,tid,time,event,trace,ip,sym,dso` (see `perf::SCRIPT_FIELDS`),
//! so an event is a header line, `rpcarena-peer-r  4242 81234.567890: cpu-clock:` (a tracepoint
//! adds its fields after the event's name), then one line per frame, `55d0c1a2b3c4 name
//! (/path/of/object)`, then an empty line. Pure: text in, samples out.

/// One frame of a stack.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    /// The function, `[unknown]` when perf found no symbol.
    pub symbol: String,
    /// The object it is in: an executable, a shared library, `[kernel.kallsyms]`, `[unknown]`.
    pub object: String,
}

/// One event with its stack.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// The thread's name.
    pub comm: String,
    /// The thread's id.
    pub tid: u32,
    /// When, in nanoseconds of perf's clock.
    pub time_ns: u64,
    /// The event's name (`cpu-clock`, `sched:sched_switch`).
    pub event: String,
    /// What follows the event's name on the header line (a tracepoint's fields).
    pub detail: String,
    /// The stack, leaf first.
    pub frames: Vec<Frame>,
}

/// Every event of a `perf script` text; lines that are neither a header nor a frame (perf's
/// warnings, `PERF_RECORD_*` lines) are skipped.
pub fn parse(text: &str) -> Vec<Sample> {
    let mut samples = Vec::new();
    let mut current: Option<Sample> = None;
    for line in text.lines() {
        if line.trim().is_empty() {
            samples.extend(current.take());
        } else if line.starts_with(char::is_whitespace) {
            if let (Some(sample), Some(frame)) = (current.as_mut(), frame(line)) {
                sample.frames.push(frame);
            }
        } else if let Some(sample) = header(line) {
            samples.extend(current.replace(sample));
        }
    }
    samples.extend(current);
    samples
}

/// `comm tid secs.micros: event: detail`, where `comm` may itself hold spaces.
fn header(line: &str) -> Option<Sample> {
    let (before, after) = split_at_time(line)?;
    let mut words: Vec<&str> = before.split_whitespace().collect();
    let time = words.pop()?;
    let tid = words.pop()?.split('/').next_back()?.parse().ok()?;
    let comm = words.join(" ");
    let (event, detail) = event_and_detail(after)?;
    Some(Sample {
        comm,
        tid,
        time_ns: seconds_to_ns(time)?,
        event,
        detail,
        frames: Vec::new(),
    })
}

/// `  250000 cpu-clock: ` or `sched:sched_switch: fields`: the first word ending in a colon is
/// the event's name (a period may come before it), the rest its detail.
fn event_and_detail(rest: &str) -> Option<(String, String)> {
    let mut start = 0;
    for word in rest.split(' ') {
        let end = start + word.len();
        if let Some(name) = word.strip_suffix(':')
            && !name.is_empty()
        {
            return Some((name.to_string(), rest[end..].trim().to_string()));
        }
        start = end + 1;
    }
    None
}

/// The header up to its time stamp (the first word `digits.digits:`), and the rest.
fn split_at_time(line: &str) -> Option<(&str, &str)> {
    let mut start = 0;
    for word in line.split(' ') {
        let end = start + word.len();
        if let Some(number) = word.strip_suffix(':')
            && number.contains('.')
            && number.bytes().all(|b| b.is_ascii_digit() || b == b'.')
        {
            return Some((&line[..end - 1], &line[end..]));
        }
        start = end + 1;
    }
    None
}

pub(crate) fn seconds_to_ns(time: &str) -> Option<u64> {
    let (secs, frac) = time.split_once('.')?;
    let mut digits = frac.to_string();
    digits.truncate(9);
    while digits.len() < 9 {
        digits.push('0');
    }
    Some(secs.parse::<u64>().ok()? * 1_000_000_000 + digits.parse::<u64>().ok()?)
}

/// `addr symbol (object)`; the symbol may hold spaces and parentheses, the object is the last
/// parenthesised part.
fn frame(line: &str) -> Option<Frame> {
    let line = line.trim();
    let (_address, rest) = line.split_once(' ')?;
    let rest = rest.trim();
    let open = rest.rfind(" (")?;
    let object = rest[open + 2..].strip_suffix(')')?;
    let symbol = strip_offset(rest[..open].trim());
    Some(Frame {
        symbol: if symbol.is_empty() {
            "[unknown]".to_string()
        } else {
            symbol.to_string()
        },
        object: object.to_string(),
    })
}

/// `name+0x1f` -> `name` (perf adds the offset with `symoff`).
fn strip_offset(symbol: &str) -> &str {
    match symbol.rsplit_once("+0x") {
        Some((name, hex)) if hex.bytes().all(|b| b.is_ascii_hexdigit()) => name,
        _ => symbol,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "\
rpcarena-peer-r  4242 81234.567890:     cpu-clock: 
\t    55d0c1a2b3c4 rpcarena_peer::stacks::tcp::serve (/opt/rpcarena-peer-rust)
\t    7f0000001000 __libc_recv (/usr/lib/x86_64-linux-gnu/libc.so.6)

tokio-runtime-w 4243/4243 81234.577890: cpu-clock:
\t    ffffffff81000000 tcp_sendmsg ([kernel.kallsyms])
\t    55d0c1a2b3c5 <rpcarena_peer::X as core::ops::Fn<(A,)>>::call (/opt/rpcarena-peer-rust)

grpc server 4244 81234.600000: sched:sched_switch: prev_comm=x prev_pid=4244 prev_state=S ==> next_comm=swapper/0
\t    ffffffff81000010 schedule ([kernel.kallsyms])
";

    #[test]
    fn headers_and_frames_are_read_leaf_first() {
        let samples = parse(TEXT);
        assert_eq!(samples.len(), 3);
        assert_eq!(samples[0].comm, "rpcarena-peer-r");
        assert_eq!(samples[0].tid, 4242);
        assert_eq!(samples[0].time_ns, 81_234_567_890_000);
        assert_eq!(samples[0].event, "cpu-clock");
        assert_eq!(
            samples[0].frames[0].symbol,
            "rpcarena_peer::stacks::tcp::serve"
        );
        assert_eq!(
            samples[0].frames[1].object,
            "/usr/lib/x86_64-linux-gnu/libc.so.6"
        );
        assert_eq!(samples[1].tid, 4243);
        assert_eq!(
            samples[1].frames[1].symbol,
            "<rpcarena_peer::X as core::ops::Fn<(A,)>>::call"
        );
        assert_eq!(samples[2].comm, "grpc server");
        assert_eq!(samples[2].event, "sched:sched_switch");
        assert!(samples[2].detail.starts_with("prev_comm=x"));
    }

    #[test]
    fn offsets_are_dropped_and_missing_symbols_named() {
        let f = frame("\t 1234 foo+0x1f (/bin/x)").unwrap();
        assert_eq!(f.symbol, "foo");
        let f = frame("\t 1234 [unknown] ([unknown])").unwrap();
        assert_eq!(f.object, "[unknown]");
    }

    #[test]
    fn noise_lines_are_skipped() {
        assert!(parse("Warning:\nsomething odd\n\n").is_empty());
    }
}
