//! The field lists of the events whose figures `samples.jsonl` keeps, each written once.
//!
//! A client's `armed` and `sample` events, the transport statistics and the per-second intervals
//! exist in two forms: on the wire, where 64-bit counters are decimal strings (JavaScript keeps
//! them exact), and in the artifacts, where they are JSON numbers (jq and spreadsheets read
//! them). One serde type cannot be both, so each list below is a macro that hands its fields to
//! a generator: `wire_structs!` here makes the wire types of [`crate::event`], and the `model`
//! crate's record generator makes the record types and their conversions from the same list. A
//! new field is written once, in its list, and appears in both forms and in the conversion.
//!
//! Each list reads
//!
//! ```text
//! /// record docs
//! record RecordName;
//! /// wire docs
//! wire WireName { /// field docs
//!                 name: kind, ... }
//! ```
//!
//! with one or more `wire` blocks (a record made of several events takes their fields in order).
//! A field's kind says its type in both forms:
//!
//! | kind | wire | record |
//! |---|---|---|
//! | `plain(T)` | `T` | `T` |
//! | `counter` | `u64` as a decimal string | `u64` |
//! | `opt(T)` | `Option<T>`, absent when `None` | the same |
//! | `opt_counter` | `Option<u64>` as a string, absent when `None` | `Option<u64>` |
//! | `counter_map` | `BTreeMap<String, u64>` of strings, absent when empty | of numbers |
//! | `list(W => R)` | `Vec<W>`, absent when empty | `Vec<R>` |
//! | `boxed(W => R)` | `Option<Box<W>>`, absent when `None` | `Option<R>` |
//!
//! Every field ends with a comma.

/// The client's `armed` and `sample` events; their record is `model::record::ClientResult`.
#[macro_export]
macro_rules! client_fields {
    ($emit:ident) => {
        $emit! {
            /// The client's `armed` and `sample` events, with counters as numbers.
            record ClientResult;
            /// A client is ready to measure.
            wire Armed {
                /// Concurrency lanes armed.
                lanes: plain(u32),
                /// Transport connections opened to the server.
                connections: plain(u32),
                /// Time to establish all connections, including TLS handshakes, in nanoseconds.
                connect_ns: opt_counter,
                /// Operations completed during the untimed warmup.
                warmup_completed: counter,
                /// Revision 1.3: operations completed in each tenth of the warmup (10 entries
                /// summing to `warmup_completed`), so a warmup still rising at its end shows.
                warmup_segments: list(Counter => u64),
            }
            /// A client's measurement of one sample. Counts cover operations admitted during the
            /// window.
            wire SampleReport {
                /// Operations admitted in the window that completed and validated.
                completed: counter,
                /// Operations admitted in the window that failed, were invalid, or did not finish
                /// the drain.
                failed: counter,
                /// Request messages sent by completed operations.
                requests: counter,
                /// Response messages received by completed operations.
                responses: counter,
                /// Request payload bytes sent by completed operations.
                request_bytes: counter,
                /// Response payload bytes received by completed operations.
                response_bytes: counter,
                /// Length of the admission window actually run, in nanoseconds.
                window_ns: counter,
                /// Time from the end of the window until the last admitted operation finished,
                /// in nanoseconds.
                drain_ns: counter,
                /// Failed operations by error code.
                failures: counter_map,
                /// The first failure's message, for the report.
                first_failure: opt(String),
                /// Latency of every completed operation: HdrHistogram V2 compressed, base64,
                /// nanoseconds. In the open model, from each operation's intended start
                /// (corrected for coordinated omission).
                histogram: plain(String),
                /// The load model that ran (`closed`, `window`, `backpressure`, `send-saturation`,
                /// `open`); absent from older peers, which ran `closed`.
                load: opt(String),
                /// Open model: latency of every completed operation from its actual start (the
                /// `histogram` is from its intended start); same encoding as `histogram`, same
                /// count.
                uncorrected_histogram: opt(String),
                /// Open model: actual minus intended start of every started operation (completed
                /// or failed), in nanoseconds; same encoding as `histogram`.
                send_lag_histogram: opt(String),
                /// Open model: intended starts before the deadline.
                offered: opt_counter,
                /// Open model: the target rate in operations per second (a JSON number).
                target_rate: opt(f64),
                /// Open model: the generator could not keep to the schedule (see
                /// docs/peer-protocol.md).
                fell_behind: opt(bool),
                /// Window, backpressure, open, send-saturation: the most operations in flight at
                /// once.
                max_in_flight: opt_counter,
                /// Send-saturation: request messages sent on every stream, completed or failed.
                sent: opt_counter,
                /// Send-saturation: request messages the server's summaries confirmed (=
                /// `completed`).
                received: opt_counter,
                /// One entry per second of the window (the last may be partial), by operation
                /// start time.
                intervals: list(Interval => IntervalRecord),
                /// Transport statistics of the client's connections over the window (optional:
                /// peers that cannot read them omit the field; see docs/peer-protocol.md,
                /// "Transport statistics").
                transport: boxed(TransportStats => TransportRecord),
                /// Revision 1.2: heap allocations of the whole client process from `START` to
                /// the end of the drain, when its `capabilities` declare them (`allocations`).
                allocations: opt_counter,
                /// Revision 1.3: CPU time of the one thread that starts every operation, from
                /// `START` to the end of the drain, in nanoseconds (`CLOCK_THREAD_CPUTIME_ID`).
                submit_cpu_ns: opt_counter,
                /// Revision 1.2: bytes the whole client process allocated over the same span,
                /// when its `capabilities` declare them.
                allocated_bytes: opt_counter,
            }
        }
    };
}

/// The operations that started in one second of a window; their record is
/// `model::record::IntervalRecord`.
#[macro_export]
macro_rules! interval_fields {
    ($emit:ident) => {
        $emit! {
            /// One second (or the last, partial second) of a window, with counters as numbers.
            record IntervalRecord;
            /// The operations of a sample that started in one second of its window.
            wire Interval {
                /// Start of the interval, in nanoseconds after the window opened (0, 1e9, 2e9,
                /// ...).
                offset_ns: counter,
                /// Operations that started in `[offset_ns, offset_ns + 1 s)` and completed.
                completed: counter,
                /// Their latencies, encoded like the sample's `histogram`.
                histogram: plain(String),
            }
        }
    };
}

/// Transport statistics (a client's over the window, a server's over its life); their record is
/// `model::transport::TransportRecord`.
#[macro_export]
macro_rules! transport_fields {
    ($emit:ident) => {
        $emit! {
            /// A peer's transport statistics as `samples.jsonl` keeps them, with counters as
            /// numbers.
            record TransportRecord;
            /// What a peer's transport did, summed over its connections: the client's over the
            /// window, the server's over its life. Counters are differences between the end and
            /// the start, gauges are read at the end (or polled throughout, where the name says
            /// so). Every figure but `transport` and `connections` is optional; a peer reports
            /// those its transport library or kernel gives.
            wire TransportStats {
                /// Where the figures come from: `tcp` (Linux `TCP_INFO`) or `quic` (the QUIC
                /// library's connection statistics).
                transport: plain(String),
                /// Connections summed over.
                connections: counter,
                /// How many times the gauges were polled (`cwnd_min_bytes`, `cwnd_mean_bytes`,
                /// and TCP's `congestion_events`).
                polls: opt_counter,
                /// Packets sent (TCP segments, QUIC packets), retransmissions included.
                packets_sent: opt_counter,
                /// Bytes sent (TCP payload bytes including retransmissions; QUIC UDP payload
                /// bytes).
                bytes_sent: opt_counter,
                /// TCP: segments retransmitted (`tcpi_total_retrans`).
                retransmitted: opt_counter,
                /// QUIC: packets declared lost.
                lost: opt_counter,
                /// TCP: retransmission timeouts (`tcpi_total_rto`, Linux 6.7 and later).
                timeouts: opt_counter,
                /// Congestion window reductions: QUIC's congestion events; TCP: entries into loss
                /// recovery or the loss state seen by the polls (a recovery shorter than the poll
                /// interval can be missed).
                congestion_events: opt_counter,
                /// Congestion window at the end, bytes (TCP: `snd_cwnd x snd_mss`).
                cwnd_bytes: opt_counter,
                /// Smallest congestion window seen by the polls, bytes.
                cwnd_min_bytes: opt_counter,
                /// Mean congestion window over the polls, bytes.
                cwnd_mean_bytes: opt_counter,
                /// Smoothed round-trip time at the end, nanoseconds (mean over connections).
                srtt_ns: opt_counter,
                /// Smallest round-trip time the transport saw, nanoseconds (mean over
                /// connections).
                min_rtt_ns: opt_counter,
                /// TCP: the kernel's latest delivery-rate estimate at the end, bits per second.
                delivery_rate_bps: opt_counter,
                /// TCP: time with data in flight (`tcpi_busy_time`), nanoseconds; the rest of the
                /// window the sender was application-limited (idle).
                busy_ns: opt_counter,
                /// TCP: time limited by the receiver's window (`tcpi_rwnd_limited`), nanoseconds.
                rwnd_limited_ns: opt_counter,
                /// TCP: time limited by the send buffer (`tcpi_sndbuf_limited`), nanoseconds.
                sndbuf_limited_ns: opt_counter,
                /// QUIC: UDP datagrams sent.
                datagrams_sent: opt_counter,
                /// QUIC: send system calls (`datagrams_sent / send_calls` is the GSO batch size).
                send_calls: opt_counter,
            }
        }
    };
}

/// Makes the wire types of a field list: counters as decimal strings (see [`crate::counter`]),
/// optional fields absent rather than `null`. Used as `crate::client_fields!(wire_structs);`.
macro_rules! wire_structs {
    ($(#[$rmeta:meta])* record $record:ident;
     $( $(#[$wmeta:meta])* wire $wire:ident { $($fields:tt)* } )+) => {
        $( wire_structs!(@munch [$(#[$wmeta])* $wire] [] $($fields)*); )+
    };
    (@munch [$(#[$wmeta:meta])* $wire:ident] [$($done:tt)*]) => {
        $(#[$wmeta])*
        #[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
        pub struct $wire { $($done)* }
    };
    (@munch $head:tt [$($done:tt)*] $(#[$m:meta])* $f:ident: plain($t:ty), $($rest:tt)*) => {
        wire_structs!(@munch $head [$($done)* $(#[$m])* pub $f: $t,] $($rest)*);
    };
    (@munch $head:tt [$($done:tt)*] $(#[$m:meta])* $f:ident: counter, $($rest:tt)*) => {
        wire_structs!(@munch $head [$($done)*
            $(#[$m])* #[serde(with = "crate::counter")] pub $f: u64,
        ] $($rest)*);
    };
    (@munch $head:tt [$($done:tt)*] $(#[$m:meta])* $f:ident: opt($t:ty), $($rest:tt)*) => {
        wire_structs!(@munch $head [$($done)*
            $(#[$m])* #[serde(default, skip_serializing_if = "Option::is_none")]
            pub $f: Option<$t>,
        ] $($rest)*);
    };
    (@munch $head:tt [$($done:tt)*] $(#[$m:meta])* $f:ident: opt_counter, $($rest:tt)*) => {
        wire_structs!(@munch $head [$($done)*
            $(#[$m])*
            #[serde(default, with = "crate::counter::option", skip_serializing_if = "Option::is_none")]
            pub $f: Option<u64>,
        ] $($rest)*);
    };
    (@munch $head:tt [$($done:tt)*] $(#[$m:meta])* $f:ident: counter_map, $($rest:tt)*) => {
        wire_structs!(@munch $head [$($done)*
            $(#[$m])*
            #[serde(default, with = "crate::counter::map", skip_serializing_if = "BTreeMap::is_empty")]
            pub $f: BTreeMap<String, u64>,
        ] $($rest)*);
    };
    (@munch $head:tt [$($done:tt)*] $(#[$m:meta])* $f:ident: list($w:ty => $r:ty), $($rest:tt)*) => {
        wire_structs!(@munch $head [$($done)*
            $(#[$m])* #[serde(default, skip_serializing_if = "Vec::is_empty")] pub $f: Vec<$w>,
        ] $($rest)*);
    };
    (@munch $head:tt [$($done:tt)*] $(#[$m:meta])* $f:ident: boxed($w:ty => $r:ty), $($rest:tt)*) => {
        wire_structs!(@munch $head [$($done)*
            $(#[$m])* #[serde(default, skip_serializing_if = "Option::is_none")]
            pub $f: Option<Box<$w>>,
        ] $($rest)*);
    };
}
pub(crate) use wire_structs;
