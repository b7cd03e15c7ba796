//! A sample's transport statistics as `samples.jsonl` keeps them: the client's optional
//! `transport` object of the `sample` event with its counters as numbers (see
//! [`rpcarena_protocol::event::TransportStats`] for what each field means).

use rpcarena_protocol::event::TransportStats;
use serde::{Deserialize, Serialize};

/// The client's transport over the window, summed over its connections.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
pub struct TransportRecord {
    /// `tcp` or `quic`.
    pub transport: String,
    /// Connections summed over.
    pub connections: u64,
    /// Polls of the gauges during the window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub polls: Option<u64>,
    /// Packets (segments) sent, retransmissions included.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub packets_sent: Option<u64>,
    /// Bytes sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes_sent: Option<u64>,
    /// TCP: segments retransmitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retransmitted: Option<u64>,
    /// QUIC: packets declared lost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lost: Option<u64>,
    /// TCP: retransmission timeouts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeouts: Option<u64>,
    /// Congestion window reductions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub congestion_events: Option<u64>,
    /// Congestion window at the end, bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwnd_bytes: Option<u64>,
    /// Smallest polled congestion window, bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwnd_min_bytes: Option<u64>,
    /// Mean polled congestion window, bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwnd_mean_bytes: Option<u64>,
    /// Smoothed RTT at the end, nanoseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub srtt_ns: Option<u64>,
    /// Smallest RTT seen, nanoseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_rtt_ns: Option<u64>,
    /// TCP: delivery-rate estimate at the end, bits per second.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivery_rate_bps: Option<u64>,
    /// TCP: time with data in flight, nanoseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub busy_ns: Option<u64>,
    /// TCP: time limited by the receive window, nanoseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rwnd_limited_ns: Option<u64>,
    /// TCP: time limited by the send buffer, nanoseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sndbuf_limited_ns: Option<u64>,
    /// QUIC: UDP datagrams sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub datagrams_sent: Option<u64>,
    /// QUIC: send system calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send_calls: Option<u64>,
}

/// Every field taken apart, so a field added to the event does not compile until it has its
/// place here.
impl From<TransportStats> for TransportRecord {
    fn from(stats: TransportStats) -> TransportRecord {
        let TransportStats {
            transport,
            connections,
            polls,
            packets_sent,
            bytes_sent,
            retransmitted,
            lost,
            timeouts,
            congestion_events,
            cwnd_bytes,
            cwnd_min_bytes,
            cwnd_mean_bytes,
            srtt_ns,
            min_rtt_ns,
            delivery_rate_bps,
            busy_ns,
            rwnd_limited_ns,
            sndbuf_limited_ns,
            datagrams_sent,
            send_calls,
        } = stats;
        TransportRecord {
            transport,
            connections,
            polls,
            packets_sent,
            bytes_sent,
            retransmitted,
            lost,
            timeouts,
            congestion_events,
            cwnd_bytes,
            cwnd_min_bytes,
            cwnd_mean_bytes,
            srtt_ns,
            min_rtt_ns,
            delivery_rate_bps,
            busy_ns,
            rwnd_limited_ns,
            sndbuf_limited_ns,
            datagrams_sent,
            send_calls,
        }
    }
}

impl TransportRecord {
    /// Packets lost or retransmitted per thousand packets sent: QUIC's lost packets, TCP's
    /// retransmitted segments; `None` without the counters or without packets.
    pub fn loss_per_mille(&self) -> Option<f64> {
        let sent = self.packets_sent.filter(|&n| n > 0)?;
        let lost = self.lost.or(self.retransmitted)?;
        Some(lost as f64 * 1000.0 / sent as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_arrive_as_numbers_and_absent_fields_stay_absent() {
        let line = r#"{"transport":"quic","connections":"1","packets_sent":"2000","lost":"3","cwnd_bytes":"14720"}"#;
        let stats: TransportStats = serde_json::from_str(line).unwrap();
        let record = TransportRecord::from(stats);
        assert_eq!(record.packets_sent, Some(2000));
        assert_eq!(record.retransmitted, None);
        assert_eq!(record.loss_per_mille(), Some(1.5));
        let json = serde_json::to_string(&record).unwrap();
        assert_eq!(
            json,
            r#"{"transport":"quic","connections":1,"packets_sent":2000,"lost":3,"cwnd_bytes":14720}"#
        );
    }

    #[test]
    fn tcp_loss_comes_from_retransmissions_and_needs_packets() {
        let record = TransportRecord {
            transport: "tcp".into(),
            connections: 4,
            packets_sent: Some(0),
            retransmitted: Some(5),
            ..TransportRecord::default()
        };
        assert_eq!(record.loss_per_mille(), None);
        let record = TransportRecord {
            packets_sent: Some(500),
            ..record
        };
        assert_eq!(record.loss_per_mille(), Some(10.0));
    }
}
