//! Why a configuration is as fast as it is: the client's transport statistics and the
//! emulator's per-direction counters of every good sample, reduced to medians per
//! configuration, and the `report.md` table that shows them beside throughput.

use crate::aggregate::Row;
use rpcarena_model::record::SampleRecord;
use rpcarena_netem_core::Counters;
use rpcarena_stats::Summary;
use std::fmt::Write;

/// One sample's figures (all optional: older records and other peers lack them).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct TransportFigures {
    /// `tcp` or `quic` (true for quic).
    pub quic: Option<bool>,
    /// Packets the client sent per operation.
    pub packets_per_op: Option<f64>,
    /// Client: lost (QUIC) or retransmitted (TCP) per thousand packets sent.
    pub loss_per_mille: Option<f64>,
    /// Client: congestion events per second of window.
    pub congestion_events_per_s: Option<f64>,
    /// Client: mean polled congestion window, KiB.
    pub cwnd_mean_kib: Option<f64>,
    /// Client: smallest polled congestion window, KiB.
    pub cwnd_min_kib: Option<f64>,
    /// Client: smoothed RTT at the end, ms.
    pub srtt_ms: Option<f64>,
    /// Client (TCP): share of the window with data in flight, percent.
    pub busy_pct: Option<f64>,
    /// Client (QUIC): datagrams per send call.
    pub datagrams_per_call: Option<f64>,
    /// Emulator, client to server: packets arrived, lost by the model, dropped at the limit,
    /// mean queueing delay in ms.
    pub c2s: Option<LinkFigures>,
    /// Emulator, server to client.
    pub s2c: Option<LinkFigures>,
}

/// One direction of the emulator over a window.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct LinkFigures {
    /// Packets that arrived.
    pub packets: f64,
    /// Lost by the loss model.
    pub lost: f64,
    /// Dropped at the queue limit.
    pub queue_dropped: f64,
    /// Mean queueing delay of admitted packets, ms.
    pub queue_wait_ms: f64,
}

impl LinkFigures {
    fn of(c: &Counters) -> LinkFigures {
        LinkFigures {
            packets: c.arrived as f64,
            lost: c.lost as f64,
            queue_dropped: c.queue_dropped as f64,
            queue_wait_ms: c.mean_queue_wait_ns().unwrap_or(0.0) / 1e6,
        }
    }
}

impl TransportFigures {
    /// The figures of one record.
    pub fn of(record: &SampleRecord) -> TransportFigures {
        let client = record.client.as_ref();
        let window_s = client.map_or(0.0, |c| c.window_ns as f64 / 1e9);
        let completed = client.map_or(0, |c| c.completed);
        let t = client.and_then(|c| c.transport.as_ref());
        let kib = |v: Option<u64>| v.map(|b| b as f64 / 1024.0);
        let ms = |v: Option<u64>| v.map(|ns| ns as f64 / 1e6);
        let ratio = |a: Option<u64>, b: Option<u64>| match (a, b) {
            (Some(a), Some(b)) if b > 0 => Some(a as f64 / b as f64),
            _ => None,
        };
        let window_ns = client.map(|c| c.window_ns + c.drain_ns);
        TransportFigures {
            quic: t.map(|t| t.transport == "quic"),
            packets_per_op: t
                .and_then(|t| t.packets_sent)
                .filter(|_| completed > 0)
                .map(|p| p as f64 / completed as f64),
            loss_per_mille: t.and_then(|t| t.loss_per_mille()),
            congestion_events_per_s: t
                .and_then(|t| t.congestion_events)
                .filter(|_| window_s > 0.0)
                .map(|e| e as f64 / window_s),
            cwnd_mean_kib: kib(t.and_then(|t| t.cwnd_mean_bytes)),
            cwnd_min_kib: kib(t.and_then(|t| t.cwnd_min_bytes)),
            srtt_ms: ms(t.and_then(|t| t.srtt_ns)),
            busy_pct: ratio(t.and_then(|t| t.busy_ns), window_ns)
                .map(|r| r * 100.0 / t.map_or(1, |t| t.connections.max(1)) as f64),
            datagrams_per_call: ratio(
                t.and_then(|t| t.datagrams_sent),
                t.and_then(|t| t.send_calls),
            ),
            c2s: record
                .network_window
                .map(|w| LinkFigures::of(&w.client_to_server)),
            s2c: record
                .network_window
                .map(|w| LinkFigures::of(&w.server_to_client)),
        }
    }

    /// Whether there is anything to show.
    pub fn is_empty(&self) -> bool {
        self.quic.is_none() && self.c2s.is_none()
    }
}

/// Medians over a configuration's good samples.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct TransportSummary {
    /// Samples with figures.
    pub samples: usize,
    /// Median of each [`TransportFigures`] field.
    pub median: TransportFigures,
}

/// The medians of `figures` (`None` when no sample has any).
pub fn summarize(figures: &[TransportFigures]) -> Option<TransportSummary> {
    let present: Vec<&TransportFigures> = figures.iter().filter(|f| !f.is_empty()).collect();
    if present.is_empty() {
        return None;
    }
    let med = |f: &dyn Fn(&TransportFigures) -> Option<f64>| -> Option<f64> {
        let values: Vec<f64> = present.iter().filter_map(|x| f(x)).collect();
        Summary::of(&values).ok().map(|s| s.median)
    };
    let link = |d: &dyn Fn(&TransportFigures) -> Option<LinkFigures>| -> Option<LinkFigures> {
        Some(LinkFigures {
            packets: med(&|f| d(f).map(|l| l.packets))?,
            lost: med(&|f| d(f).map(|l| l.lost))?,
            queue_dropped: med(&|f| d(f).map(|l| l.queue_dropped))?,
            queue_wait_ms: med(&|f| d(f).map(|l| l.queue_wait_ms))?,
        })
    };
    Some(TransportSummary {
        samples: present.len(),
        median: TransportFigures {
            quic: present.iter().find_map(|f| f.quic),
            packets_per_op: med(&|f| f.packets_per_op),
            loss_per_mille: med(&|f| f.loss_per_mille),
            congestion_events_per_s: med(&|f| f.congestion_events_per_s),
            cwnd_mean_kib: med(&|f| f.cwnd_mean_kib),
            cwnd_min_kib: med(&|f| f.cwnd_min_kib),
            srtt_ms: med(&|f| f.srtt_ms),
            busy_pct: med(&|f| f.busy_pct),
            datagrams_per_call: med(&|f| f.datagrams_per_call),
            c2s: link(&|f| f.c2s),
            s2c: link(&|f| f.s2c),
        },
    })
}

fn opt(v: Option<f64>, decimals: usize) -> String {
    v.map_or_else(|| "-".to_string(), |v| format!("{v:.decimals$}"))
}

fn link_cell(l: Option<LinkFigures>) -> String {
    l.map_or_else(
        || "-".to_string(),
        |l| {
            format!(
                "{:.0} / {:.0} / {:.0} / {:.2}",
                l.packets, l.lost, l.queue_dropped, l.queue_wait_ms
            )
        },
    )
}

/// The "Transport and link" section: one line per configuration with figures.
pub fn write_section(out: &mut String, rows: &[Row]) {
    let lines: Vec<String> = rows
        .iter()
        .filter_map(|row| {
            let s = row.transport?;
            let m = &s.median;
            let ops = row.metrics.as_ref().map(|x| x.ops_per_s.median);
            let transport = match m.quic {
                Some(true) => "quic",
                Some(false) => "tcp",
                None => "-",
            };
            let cwnd = match (m.cwnd_mean_kib, m.cwnd_min_kib) {
                (Some(mean), Some(min)) => format!("{mean:.0} ({min:.0})"),
                _ => "-".to_string(),
            };
            let busy_or_batch = match m.quic {
                Some(true) => opt(m.datagrams_per_call, 2) + " dg/call",
                Some(false) => opt(m.busy_pct, 0) + " % busy",
                None => "-".to_string(),
            };
            Some(format!(
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                row.config.cell,
                row.config.shape.as_str(),
                row.config.concurrency,
                opt(ops, 1),
                transport,
                opt(m.packets_per_op, 1),
                opt(m.loss_per_mille, 2),
                opt(m.congestion_events_per_s, 1),
                cwnd,
                opt(m.srtt_ms, 1),
                busy_or_batch,
                link_cell(m.c2s),
                link_cell(m.s2c),
            ))
        })
        .collect();
    if lines.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "### Transport and link

Why a configuration is as fast as it is, medians over good samples. From the client's transport (its `sample` event, sending side only): packets sent per operation; packets lost (QUIC) or segments retransmitted (TCP) per thousand sent; congestion window reductions per second; congestion window in KiB, mean (min) over polls every 5 ms, summed over connections; smoothed RTT at the end in ms; TCP: the share of the window with data in flight (the rest is application-limited), QUIC: datagrams per send call. From the emulator, per direction over the window: packets arrived / lost by the model / dropped at the queue limit / mean queueing delay in ms.
"
    );
    let _ = writeln!(
        out,
        "| Cell | Shape | c | ops/s | transport | pkts/op | lost or retx per 1000 | cwnd cuts/s | cwnd KiB mean (min) | srtt ms | busy or batch | link c->s pkts / lost / qdrop / wait ms | link s->c |"
    );
    let _ = writeln!(out, "|---|---|--:|--:|---|--:|--:|--:|--:|--:|--:|--:|--:|");
    for line in lines {
        let _ = writeln!(out, "{line}");
    }
    out.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn figures(loss: f64, c2s_lost: f64) -> TransportFigures {
        TransportFigures {
            quic: Some(false),
            loss_per_mille: Some(loss),
            c2s: Some(LinkFigures {
                packets: 1000.0,
                lost: c2s_lost,
                queue_dropped: 0.0,
                queue_wait_ms: 0.5,
            }),
            ..TransportFigures::default()
        }
    }

    #[test]
    fn medians_skip_samples_without_figures() {
        let s = summarize(&[
            figures(1.0, 1.0),
            TransportFigures::default(),
            figures(3.0, 2.0),
            figures(2.0, 9.0),
        ])
        .unwrap();
        assert_eq!(s.samples, 3);
        assert_eq!(s.median.loss_per_mille, Some(2.0));
        assert_eq!(s.median.c2s.unwrap().lost, 2.0);
        assert_eq!(s.median.s2c, None);
        assert_eq!(s.median.srtt_ms, None);
        assert!(summarize(&[TransportFigures::default()]).is_none());
    }
}
