//! What one UDP send is in each loss granularity, and the pure arithmetic of judging streams of
//! them.
//!
//! With granularity `packet` every probe is one datagram, one wire packet, one emulator
//! decision. With `offload` the UDP phases send the way a GSO-using QUIC stack (quinn, quiche)
//! does: one `sendmsg` carries a UDP GSO bundle (`UDP_SEGMENT`) of [`GSO_SEGMENTS`] equal
//! segments, the kernel hands it to the offloading TUN whole, and the emulator loses, delays,
//! queues (one slot of `limit`) and rate-limits it as one unit, charging
//! `segments x (payload + 28) + overhead` bytes (`netem_core::vnet::Bundle`: IP and UDP headers
//! per segment, the overhead once). The receiver takes bundles whole with `UDP_GRO` (the
//! `UDP_GRO` control message gives the segment size). Every segment still carries its own
//! sequence number and send time, so per-segment loss, reordering, rate and delay are read
//! exactly as in packet mode; what changes is what the profile implies for them, computed here.

use std::ops::Range;

use rpcarena_netem_core::{DirectionSpec, Granularity};

/// Segments per UDP GSO bundle in offload mode: 44 x 1,472 payload bytes + 28 header bytes =
/// 64,796 bytes, the most full-MTU segments that fit the 64 KiB GSO limit.
pub(crate) const GSO_SEGMENTS: usize = 44;

/// IP + UDP header bytes of every segment.
const UDP_IP_HEADERS: usize = crate::context::UDP_IP_HEADERS;

/// What one send carries: `segments` datagrams of `payload` bytes each (1 in packet mode).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Unit {
    /// Segments per send (1: a plain datagram; more: one UDP GSO bundle).
    pub segments: usize,
    /// UDP payload bytes per segment.
    pub payload: usize,
}

impl Unit {
    /// The unit of `granularity` for segments of `payload` bytes.
    pub(crate) fn of(granularity: Granularity, payload: usize) -> Unit {
        Unit {
            segments: match granularity {
                Granularity::Packet => 1,
                Granularity::Offload => GSO_SEGMENTS,
            },
            payload,
        }
    }

    /// Whether sends are GSO bundles (and receives need `UDP_GRO`).
    pub(crate) fn is_bundle(&self) -> bool {
        self.segments > 1
    }

    /// The bytes the emulator charges a full unit, without the spec's overhead: IP and UDP
    /// headers once per segment (`netem_core::vnet::Bundle::wire_len`).
    pub(crate) fn wire_len(&self) -> usize {
        self.segments * (self.payload + UDP_IP_HEADERS)
    }

    /// Units per second `spec`'s rate carries (the overhead charged once per unit).
    pub(crate) fn per_second(&self, spec: &DirectionSpec) -> Option<f64> {
        spec.packets_per_second(self.wire_len())
    }

    /// Serialization time of one full unit at `spec`'s rate, ns.
    pub(crate) fn serialization_ns(&self, spec: &DirectionSpec) -> Option<u64> {
        spec.serialization_ns(self.wire_len())
    }

    /// The UDP payload rate, bit/s, of a link saturated with full units.
    pub(crate) fn payload_rate_bps(&self, spec: &DirectionSpec) -> Option<f64> {
        self.per_second(spec)
            .map(|u| u * (self.segments * self.payload) as f64 * 8.0)
    }

    /// The unit (bundle) a segment's sequence number belongs to.
    pub(crate) fn of_seq(&self, seq: u64) -> u64 {
        seq / self.segments as u64
    }

    /// Units needed to send `segments` segments (the last one may be short).
    pub(crate) fn units_for(&self, segments: u64) -> u64 {
        segments.div_ceil(self.segments as u64)
    }

    /// Text for reports: "1472-byte datagrams" or "UDP GSO bundles of 44 x 1472-byte segments".
    pub(crate) fn describe(&self) -> String {
        if self.is_bundle() {
            format!(
                "UDP GSO bundles of {} x {}-byte segments (one sendmsg each, received with UDP_GRO)",
                self.segments, self.payload
            )
        } else {
            format!("{}-byte datagrams", self.payload)
        }
    }
}

/// What the UDP phases send in `granularity`, for the report's header.
pub(crate) fn describe_udp_probes(granularity: Granularity) -> String {
    match granularity {
        Granularity::Packet => "single datagrams (loss, rate and overfill phases); RTT echoes \
                                single 60-byte packets"
            .to_string(),
        Granularity::Offload => format!(
            "UDP GSO bundles (UDP_SEGMENT, {GSO_SEGMENTS} segments per sendmsg: {GSO_SEGMENTS} x 32 bytes in \
             the loss phase, {GSO_SEGMENTS} x the full-MTU payload in the rate and overfill phases; received \
             with UDP_GRO), each lost, delayed, queued and rate-limited as one unit; loss judged \
             per bundle; RTT echoes single 60-byte packets"
        ),
    }
}

/// The segments of a received datagram of `len` bytes: one, or, when `UDP_GRO` coalesced
/// several, `len / gro_size` of `gro_size` bytes and a shorter last one.
pub(crate) fn segment_ranges(
    len: usize,
    gro_size: Option<usize>,
) -> impl Iterator<Item = Range<usize>> {
    let step = match gro_size {
        Some(s) if s > 0 && s < len => s,
        _ => len.max(1),
    };
    (0..len)
        .step_by(step)
        .map(move |at| at..(at + step).min(len))
}

/// How bundles came through, from which of their segments arrived.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct BundleTally {
    /// Bundles with every segment received.
    pub complete: u64,
    /// Bundles with some, not all, segments received: impossible when the emulator decides per
    /// bundle, so any is an error of the path.
    pub partial: u64,
    /// Bundles with no segment received.
    pub lost: u64,
}

/// Tallies the `count` segments sent as `unit`s by which of them `received` says arrived.
pub(crate) fn tally_bundles(unit: Unit, count: u64, received: impl Fn(u64) -> bool) -> BundleTally {
    let mut tally = BundleTally::default();
    let n = unit.segments as u64;
    for b in 0..unit.units_for(count) {
        let seqs = b * n..((b + 1) * n).min(count);
        let total = seqs.end - seqs.start;
        let got = seqs.filter(|&s| received(s)).count() as u64;
        match got {
            0 => tally.lost += 1,
            g if g == total => tally.complete += 1,
            _ => tally.partial += 1,
        }
    }
    tally
}

/// Payload rate, bit/s, over `records` ((seq, tx_ns, rx_ns) in arrival order) of `unit`s: the
/// segments of every unit after the first one, over the time from the first unit's arrival to
/// the last arrival. Segments of one bundle share a receive time, so the first unit's are
/// excluded whole (for single datagrams: all records but the first). `None` when there is no
/// time to divide by.
pub(crate) fn payload_rate_bps(records: &[(u64, u64, u64)], unit: Unit) -> Option<f64> {
    let first = records.first()?;
    let first_unit = unit.of_seq(first.0);
    let counted = records
        .iter()
        .filter(|r| !(unit.of_seq(r.0) == first_unit && r.2 == first.2))
        .count();
    let last = records.last()?;
    let span_ns = last.2.checked_sub(first.2).filter(|&s| s > 0)?;
    Some(counted as f64 * unit.payload as f64 * 8.0 / (span_ns as f64 / 1e9))
}

/// A set of sequence numbers below a known count.
pub(crate) struct SeqSet(Vec<u64>);

impl SeqSet {
    pub(crate) fn new(count: u64) -> SeqSet {
        SeqSet(vec![0; (count as usize).div_ceil(64)])
    }

    /// Adds `seq`; false when it was already there.
    pub(crate) fn insert(&mut self, seq: u64) -> bool {
        let (word, bit) = ((seq / 64) as usize, seq % 64);
        let fresh = self.0[word] & (1 << bit) == 0;
        self.0[word] |= 1 << bit;
        fresh
    }

    pub(crate) fn contains(&self, seq: u64) -> bool {
        self.0
            .get((seq / 64) as usize)
            .is_some_and(|w| w & (1 << (seq % 64)) != 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rpcarena_netem_core::profile_by_name;

    #[test]
    fn a_bundle_is_44_full_segments_within_64_kib() {
        let u = Unit::of(Granularity::Offload, 1472);
        assert_eq!(u.segments, 44);
        assert_eq!(u.wire_len(), 66_000);
        // The IP packet the kernel builds: one IP + UDP header and every payload byte.
        assert!(u.segments * u.payload + UDP_IP_HEADERS <= 65_535);
        assert!((u.segments + 1) * u.payload + UDP_IP_HEADERS > 65_535);
        assert_eq!(Unit::of(Granularity::Packet, 1472).segments, 1);
    }

    #[test]
    fn bundle_rate_charges_headers_per_segment_and_overhead_once() {
        let spec = profile_by_name("regional-wan").unwrap().client_to_server;
        let packet = Unit::of(Granularity::Packet, 1472);
        let bundle = Unit::of(Granularity::Offload, 1472);
        // Packet mode: 100 Mbit/s x 1472 / 1514, the figure netcheck always expected.
        let p = packet.payload_rate_bps(&spec).unwrap();
        assert!((p - 100e6 * 1472.0 / 1514.0).abs() < 1.0, "{p}");
        // A bundle: 44 x 1472 payload bytes for 44 x 1500 + 14 charged.
        let b = bundle.payload_rate_bps(&spec).unwrap();
        assert!((b - 100e6 * 64_768.0 / 66_014.0).abs() < 1.0, "{b}");
        assert_eq!(bundle.serialization_ns(&spec), Some(5_281_120));
        assert!((bundle.per_second(&spec).unwrap() - 100e6 / (66_014.0 * 8.0)).abs() < 1e-9);
    }

    #[test]
    fn gro_datagrams_split_into_segments() {
        let r: Vec<_> = segment_ranges(3 * 1472, Some(1472)).collect();
        assert_eq!(r, vec![0..1472, 1472..2944, 2944..4416]);
        let r: Vec<_> = segment_ranges(2 * 1472 + 100, Some(1472)).collect();
        assert_eq!(r, vec![0..1472, 1472..2944, 2944..3044]);
        // No control message, or one segment: the datagram as it is.
        assert_eq!(
            segment_ranges(1472, None).collect::<Vec<_>>(),
            vec![0..1472]
        );
        assert_eq!(
            segment_ranges(500, Some(1472)).collect::<Vec<_>>(),
            vec![0..500]
        );
        assert_eq!(segment_ranges(0, None).count(), 0);
    }

    #[test]
    fn bundles_are_tallied_whole_partial_or_lost() {
        let unit = Unit {
            segments: 4,
            payload: 32,
        };
        // 10 segments: bundles {0-3} complete, {4-7} lost, {8,9} partial (8 only).
        let got = [0, 1, 2, 3, 8];
        let t = tally_bundles(unit, 10, |s| got.contains(&s));
        assert_eq!(
            t,
            BundleTally {
                complete: 1,
                partial: 1,
                lost: 1
            }
        );
        let one = Unit {
            segments: 1,
            payload: 32,
        };
        let t = tally_bundles(one, 5, |s| s != 2);
        assert_eq!((t.complete, t.partial, t.lost), (4, 0, 1));
    }

    #[test]
    fn payload_rate_of_single_datagrams_is_the_old_formula() {
        let unit = Unit {
            segments: 1,
            payload: 1000,
        };
        // 11 arrivals 1 ms apart: 10 x 1000 bytes in 10 ms = 8 Mbit/s.
        let records: Vec<_> = (0..11u64)
            .map(|s| (s, 0, 5_000_000 + s * 1_000_000))
            .collect();
        assert_eq!(payload_rate_bps(&records, unit), Some(8e6));
    }

    #[test]
    fn payload_rate_of_bundles_excludes_the_first_bundle_whole() {
        let unit = Unit {
            segments: 4,
            payload: 1000,
        };
        // The window starts mid-bundle (seq 2, 3 of bundle 0), then bundles 1 and 2, 1 ms
        // apart: 8 segments counted over 2 ms.
        let mut records = vec![(2, 0, 10_000_000), (3, 0, 10_000_000)];
        for b in 1..3u64 {
            for s in 0..4 {
                records.push((b * 4 + s, 0, 10_000_000 + b * 1_000_000));
            }
        }
        let r = payload_rate_bps(&records, unit).unwrap();
        assert!((r - 8.0 * 1000.0 * 8.0 / 0.002).abs() < 1e-6, "{r}");
        assert_eq!(payload_rate_bps(&records[..2], unit), None);
        assert_eq!(payload_rate_bps(&[], unit), None);
    }

    #[test]
    fn seq_set_reports_duplicates() {
        let mut s = SeqSet::new(130);
        assert!(s.insert(129));
        assert!(!s.insert(129));
        assert!(s.contains(129) && !s.contains(128) && !s.contains(1000));
    }
}
