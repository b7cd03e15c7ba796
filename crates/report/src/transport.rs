//! Why a configuration is as fast as it is: the client's and the server's transport statistics
//! and the emulator's per-direction counters of every good sample, reduced to medians per
//! configuration, and the `report.md` table that shows them beside throughput.

use crate::aggregate::Row;
use rpcarena_model::record::SampleRecord;
use rpcarena_model::transport::TransportRecord;
use rpcarena_netem_core::Counters;
use rpcarena_stats::Summary;
use std::fmt::Write;

/// One peer's transport figures (all optional: older records and other peers lack them).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SideFigures {
    /// Packets sent per operation.
    pub packets_per_op: Option<f64>,
    /// Lost (QUIC) or retransmitted (TCP) per thousand packets sent.
    pub loss_per_mille: Option<f64>,
    /// Congestion events per second of window (the client only: the server's figures cover a
    /// life the record does not time).
    pub congestion_events_per_s: Option<f64>,
    /// Mean polled congestion window, KiB.
    pub cwnd_mean_kib: Option<f64>,
    /// Smallest polled congestion window, KiB.
    pub cwnd_min_kib: Option<f64>,
    /// Smoothed RTT at the end, ms.
    pub srtt_ms: Option<f64>,
    /// TCP, the client only: share of the window with data in flight, percent.
    pub busy_pct: Option<f64>,
    /// QUIC: datagrams per send call.
    pub datagrams_per_call: Option<f64>,
}

impl SideFigures {
    /// The figures of `t` over `ops` operations (`window_s`: the seconds its counters cover,
    /// when known; `busy_of_ns`: the time its busy share is a share of).
    fn of(
        t: &TransportRecord,
        ops: u64,
        window_s: Option<f64>,
        busy_of_ns: Option<u64>,
    ) -> SideFigures {
        let kib = |v: Option<u64>| v.map(|b| b as f64 / 1024.0);
        let ratio = |a: Option<u64>, b: Option<u64>| match (a, b) {
            (Some(a), Some(b)) if b > 0 => Some(a as f64 / b as f64),
            _ => None,
        };
        SideFigures {
            packets_per_op: t
                .packets_sent
                .filter(|_| ops > 0)
                .map(|p| p as f64 / ops as f64),
            loss_per_mille: t.loss_per_mille(),
            congestion_events_per_s: t
                .congestion_events
                .zip(window_s.filter(|&w| w > 0.0))
                .map(|(e, w)| e as f64 / w),
            cwnd_mean_kib: kib(t.cwnd_mean_bytes),
            cwnd_min_kib: kib(t.cwnd_min_bytes),
            srtt_ms: t.srtt_ns.map(|ns| ns as f64 / 1e6),
            busy_pct: ratio(t.busy_ns, busy_of_ns).map(|r| r * 100.0 / t.connections.max(1) as f64),
            datagrams_per_call: ratio(t.datagrams_sent, t.send_calls),
        }
    }
}

/// One sample's figures (all optional: older records and other peers lack them).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct TransportFigures {
    /// `tcp` or `quic` (true for quic), from the client or else the server.
    pub quic: Option<bool>,
    /// The client's transport over the window (its `sample` event).
    pub client: Option<SideFigures>,
    /// The server's transport over its life, warmup and drain included (its `stopped` event);
    /// per operation of its life (`rpcs` it counted, or warmup plus window).
    pub server: Option<SideFigures>,
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
        let result = record.client.as_ref();
        let client = result.and_then(|c| {
            let t = c.transport.as_ref()?;
            Some(SideFigures::of(
                t,
                c.completed,
                Some(c.window_ns as f64 / 1e9),
                Some(c.window_ns + c.drain_ns),
            ))
        });
        let server_t = record.server.as_ref().and_then(|s| s.transport.as_ref());
        let server = server_t.map(|t| {
            let ops = record
                .server_counters
                .get("rpcs")
                .copied()
                .unwrap_or_else(|| result.map_or(0, |c| c.warmup_completed + c.completed));
            SideFigures::of(t, ops, None, None)
        });
        let client_t = result.and_then(|c| c.transport.as_ref());
        TransportFigures {
            quic: client_t.or(server_t).map(|t| t.transport == "quic"),
            client,
            server,
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
        self.client.is_none() && self.server.is_none() && self.c2s.is_none()
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

type Median<'a> = &'a dyn Fn(&dyn Fn(&TransportFigures) -> Option<f64>) -> Option<f64>;

/// The medians of one side's figures over the samples that have that side.
fn side(
    present: &[&TransportFigures],
    med: Median<'_>,
    pick: fn(&TransportFigures) -> Option<SideFigures>,
) -> Option<SideFigures> {
    present.iter().find_map(|f| pick(f))?;
    let m = |field: fn(&SideFigures) -> Option<f64>| med(&|f| pick(f).and_then(|s| field(&s)));
    Some(SideFigures {
        packets_per_op: m(|s| s.packets_per_op),
        loss_per_mille: m(|s| s.loss_per_mille),
        congestion_events_per_s: m(|s| s.congestion_events_per_s),
        cwnd_mean_kib: m(|s| s.cwnd_mean_kib),
        cwnd_min_kib: m(|s| s.cwnd_min_kib),
        srtt_ms: m(|s| s.srtt_ms),
        busy_pct: m(|s| s.busy_pct),
        datagrams_per_call: m(|s| s.datagrams_per_call),
    })
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
            client: side(&present, &med, |f| f.client),
            server: side(&present, &med, |f| f.server),
            c2s: link(&|f| f.c2s),
            s2c: link(&|f| f.s2c),
        },
    })
}

fn opt(v: Option<f64>, decimals: usize) -> String {
    v.map_or_else(|| "-".to_string(), |v| format!("{v:.decimals$}"))
}

/// `client / server` of one figure; `-` for a side without it.
fn pair(m: &TransportFigures, f: fn(&SideFigures) -> Option<f64>, decimals: usize) -> String {
    let one = |s: Option<SideFigures>| opt(s.and_then(|s| f(&s)), decimals);
    format!("{} / {}", one(m.client), one(m.server))
}

fn cwnd(s: Option<SideFigures>) -> String {
    match s.map(|s| (s.cwnd_mean_kib, s.cwnd_min_kib)) {
        Some((Some(mean), Some(min))) => format!("{mean:.0} ({min:.0})"),
        _ => "-".to_string(),
    }
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
            let client = m.client.unwrap_or_default();
            let busy_or_batch = match m.quic {
                Some(true) => opt(client.datagrams_per_call, 2) + " dg/call",
                Some(false) => opt(client.busy_pct, 0) + " % busy",
                None => "-".to_string(),
            };
            Some(format!(
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} / {} | {} | {} | {} | {} |",
                row.config.cell,
                row.config.shape.as_str(),
                row.config.concurrency,
                opt(ops, 1),
                transport,
                pair(m, |s| s.packets_per_op, 1),
                pair(m, |s| s.loss_per_mille, 2),
                opt(client.congestion_events_per_s, 1),
                cwnd(m.client),
                cwnd(m.server),
                pair(m, |s| s.srtt_ms, 1),
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

Why a configuration is as fast as it is, medians over good samples. Pairs are client / server: the client's transport over the window (its `sample` event), the server's over its whole life, warmup, window and drain (its `stopped` event, per operation it served); `-` where a peer does not report it. Packets sent per operation; packets lost (QUIC) or segments retransmitted (TCP) per thousand sent; the client's congestion window reductions per second; congestion window in KiB, mean (min) over polls every 5 ms, summed over connections; smoothed RTT at the end in ms; the client's TCP share of the window with data in flight (the rest is application-limited), or QUIC datagrams per send call. From the emulator, per direction over the window: packets arrived / lost by the model / dropped at the queue limit / mean queueing delay in ms.
"
    );
    crate::table::write(
        out,
        "| Cell | Shape | c | ops/s | transport | pkts/op (client / server) | lost or retx per 1000 (client / server) | client cwnd cuts/s | cwnd KiB mean (min) (client / server) | srtt ms (client / server) | busy or batch | link c->s pkts / lost / qdrop / wait ms | link s->c |",
        "|---|---|--:|--:|---|--:|--:|--:|--:|--:|--:|--:|--:|",
        &lines,
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use rpcarena_model::record::{ClientResult, SampleStatus, ServerResult};
    use std::collections::BTreeMap;

    fn figures(loss: f64, c2s_lost: f64) -> TransportFigures {
        TransportFigures {
            quic: Some(false),
            client: Some(SideFigures {
                loss_per_mille: Some(loss),
                ..SideFigures::default()
            }),
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
        let client = s.median.client.unwrap();
        assert_eq!(client.loss_per_mille, Some(2.0));
        assert_eq!(s.median.c2s.unwrap().lost, 2.0);
        assert_eq!(s.median.s2c, None);
        assert_eq!(client.srtt_ms, None);
        assert_eq!(s.median.server, None, "no sample had the server's");
        assert!(summarize(&[TransportFigures::default()]).is_none());
    }

    fn tcp(packets: u64, retransmitted: u64, cwnd_mean: u64, srtt_ms: u64) -> TransportRecord {
        TransportRecord {
            transport: "tcp".into(),
            connections: 1,
            packets_sent: Some(packets),
            retransmitted: Some(retransmitted),
            congestion_events: Some(5),
            cwnd_mean_bytes: Some(cwnd_mean),
            cwnd_min_bytes: Some(cwnd_mean / 2),
            srtt_ns: Some(srtt_ms * 1_000_000),
            busy_ns: Some(2_500_000_000),
            ..TransportRecord::default()
        }
    }

    fn record(server: Option<TransportRecord>, rpcs: Option<u64>) -> SampleRecord {
        let line = r#"{"sample":"r01-001","round":1,"position":1,"config":{"key":"k","cell":"rust-grpc","client":"rust","server":"rust","stack":"grpc","shape":"server_stream","concurrency":1,"request_size":256,"response_size":256,"messages_per_stream":128,"payload":"zeros","load":{"model":"closed"}},"status":"ok","started_at":"","elapsed_ms":0,"client_language":"rust","server_language":"rust","raw":"raw/x"}"#;
        let mut record: SampleRecord = serde_json::from_str(line).unwrap();
        assert_eq!(record.status, SampleStatus::Ok);
        record.client = Some(ClientResult {
            completed: 100,
            warmup_completed: 20,
            window_ns: 5_000_000_000,
            transport: Some(tcp(400, 0, 40_960, 31)),
            ..ClientResult::default()
        });
        record.server = server.map(|t| ServerResult {
            transport: Some(t),
            ..ServerResult::default()
        });
        record.server_counters = rpcs
            .map(|n| BTreeMap::from([("rpcs".to_string(), n)]))
            .unwrap_or_default();
        record
    }

    #[test]
    fn the_servers_figures_are_per_operation_of_its_life() {
        let f = TransportFigures::of(&record(Some(tcp(3_000, 6, 102_400, 33)), Some(125)));
        let client = f.client.unwrap();
        assert_eq!(client.packets_per_op, Some(4.0));
        assert_eq!(client.congestion_events_per_s, Some(1.0));
        assert_eq!(client.busy_pct, Some(50.0));
        let server = f.server.unwrap();
        assert_eq!(server.packets_per_op, Some(24.0), "3000 packets / 125 rpcs");
        assert_eq!(server.loss_per_mille, Some(2.0));
        assert_eq!(
            (server.cwnd_mean_kib, server.cwnd_min_kib),
            (Some(100.0), Some(50.0))
        );
        assert_eq!(server.srtt_ms, Some(33.0));
        assert_eq!(
            (server.congestion_events_per_s, server.busy_pct),
            (None, None),
            "the server's life is not timed"
        );
        // Without the server's rpcs counter: warmup plus window operations.
        let f = TransportFigures::of(&record(Some(tcp(3_000, 6, 102_400, 33)), None));
        assert_eq!(f.server.unwrap().packets_per_op, Some(25.0));
        // An older record or a peer that does not report it: no server side.
        assert_eq!(TransportFigures::of(&record(None, Some(125))).server, None);
    }

    #[test]
    fn the_table_shows_client_and_server_side_by_side() {
        let f = TransportFigures::of(&record(Some(tcp(3_000, 6, 102_400, 33)), Some(125)));
        let m = summarize(&[f]).unwrap().median;
        assert_eq!(pair(&m, |s| s.packets_per_op, 1), "4.0 / 24.0");
        assert_eq!(pair(&m, |s| s.loss_per_mille, 2), "0.00 / 2.00");
        assert_eq!(pair(&m, |s| s.srtt_ms, 1), "31.0 / 33.0");
        assert_eq!(
            format!("{} / {}", cwnd(m.client), cwnd(m.server)),
            "40 (20) / 100 (50)"
        );
        let without = summarize(&[TransportFigures::of(&record(None, None))])
            .unwrap()
            .median;
        assert_eq!(pair(&without, |s| s.packets_per_op, 1), "4.0 / -");
        assert_eq!(cwnd(without.server), "-");
    }
}
