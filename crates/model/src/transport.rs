//! A sample's transport statistics as `samples.jsonl` keeps them: the client's optional
//! `transport` object of the `sample` event with its counters as numbers (see
//! [`rpcarena_protocol::event::TransportStats`] for what each field means).

use crate::fields::record_struct;

rpcarena_protocol::transport_fields!(record_struct);

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
    use rpcarena_protocol::event::TransportStats;

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
