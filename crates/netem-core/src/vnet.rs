//! Offload bundles as a TUN device with `IFF_VNET_HDR` hands them over: a 10-byte
//! `struct virtio_net_hdr` (include/uapi/linux/virtio_net.h) followed by one IP packet of up to
//! 64 KiB that the kernel would otherwise have cut into `gso_size`-byte segments.
//!
//! [`Bundle::parse`] says how many wire packets a bundle stands for and how many bytes they
//! take on the wire (each segment repeats the IP and transport headers), so the rate charges
//! what the segments would occupy while loss, delay and the queue limit act on the bundle.

/// Length of the `virtio_net_hdr` in front of every packet (no `num_buffers`: TUN uses the
/// basic header unless `TUNSETVNETHDRSZ` asks for more).
pub const VNET_HDR_LEN: usize = 10;

/// `gso_type` values.
const GSO_NONE: u8 = 0;
const GSO_TCPV4: u8 = 1;
const GSO_UDP: u8 = 3;
const GSO_TCPV6: u8 = 4;
const GSO_UDP_L4: u8 = 5;
/// `VIRTIO_NET_HDR_GSO_ECN`, or-ed into `gso_type`.
const GSO_ECN: u8 = 0x80;

/// What one frame read from an offloading TUN holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bundle {
    /// The IP packet's length (the frame minus the header).
    pub ip_len: usize,
    /// Wire packets it stands for (1 without GSO).
    pub segments: u32,
    /// Bytes those packets take at the IP layer: the payload plus one copy of the headers per
    /// segment.
    pub wire_len: usize,
}

impl Bundle {
    /// Reads a frame (`virtio_net_hdr` + IP packet). Errors name what is malformed.
    pub fn parse(frame: &[u8]) -> Result<Bundle, String> {
        if frame.len() <= VNET_HDR_LEN {
            return Err(format!(
                "a {}-byte frame is too short for the {VNET_HDR_LEN}-byte virtio-net header and a packet",
                frame.len()
            ));
        }
        let gso_type = frame[1] & !GSO_ECN;
        let gso_size = u16::from_le_bytes([frame[4], frame[5]]) as usize;
        let packet = &frame[VNET_HDR_LEN..];
        let ip_len = packet.len();
        if gso_type == GSO_NONE || gso_size == 0 {
            return Ok(Bundle {
                ip_len,
                segments: 1,
                wire_len: ip_len,
            });
        }
        let headers = header_len(packet, gso_type)?;
        let payload = ip_len.checked_sub(headers).ok_or_else(|| {
            format!("a GSO packet of {ip_len} bytes is shorter than its {headers} header bytes")
        })?;
        let segments = payload.div_ceil(gso_size).max(1);
        Ok(Bundle {
            ip_len,
            segments: segments as u32,
            wire_len: payload + segments * headers,
        })
    }
}

/// IP plus TCP or UDP header length of `packet`.
fn header_len(packet: &[u8], gso_type: u8) -> Result<usize, String> {
    let ip_len = match packet[0] >> 4 {
        4 => ((packet[0] & 0x0f) as usize) * 4,
        // IPv6 without extension headers (the kernel's GSO packets from a plain socket).
        6 => 40,
        v => return Err(format!("IP version {v} in a GSO packet")),
    };
    let transport = match gso_type {
        GSO_TCPV4 | GSO_TCPV6 => {
            let doff = packet
                .get(ip_len + 12)
                .ok_or("a GSO TCP packet cut inside its TCP header")?;
            ((doff >> 4) as usize) * 4
        }
        GSO_UDP | GSO_UDP_L4 => 8,
        other => return Err(format!("unknown virtio-net gso_type {other}")),
    };
    Ok(ip_len + transport)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A frame: header with `gso_type`/`gso_size`, then an IPv4 packet with a 20-byte IP header
    /// and a 32-byte TCP header (timestamps) carrying `payload` bytes.
    fn tcp_frame(gso_type: u8, gso_size: u16, payload: usize) -> Vec<u8> {
        let mut f = vec![0u8; VNET_HDR_LEN];
        f[0] = 1; // VIRTIO_NET_HDR_F_NEEDS_CSUM
        f[1] = gso_type;
        f[4..6].copy_from_slice(&gso_size.to_le_bytes());
        let mut ip = vec![0u8; 20 + 32 + payload];
        ip[0] = 0x45;
        ip[9] = 6;
        ip[20 + 12] = 8 << 4; // data offset 8 words
        f.extend_from_slice(&ip);
        f
    }

    #[test]
    fn a_plain_packet_is_one_segment() {
        let b = Bundle::parse(&tcp_frame(GSO_NONE, 0, 1000)).unwrap();
        assert_eq!(
            b,
            Bundle {
                ip_len: 1052,
                segments: 1,
                wire_len: 1052
            }
        );
    }

    #[test]
    fn a_tso_bundle_counts_every_segment_and_its_headers() {
        // 10 full segments of 1448 bytes and a last one of 520: 11 wire packets.
        let b = Bundle::parse(&tcp_frame(GSO_TCPV4, 1448, 14_480 + 520)).unwrap();
        assert_eq!(b.segments, 11);
        assert_eq!(b.ip_len, 52 + 15_000);
        assert_eq!(b.wire_len, 15_000 + 11 * 52);
        // The ECN bit does not change the type.
        let e = Bundle::parse(&tcp_frame(GSO_TCPV4 | GSO_ECN, 1448, 2896)).unwrap();
        assert_eq!((e.segments, e.wire_len), (2, 2896 + 2 * 52));
    }

    #[test]
    fn udp_segmentation_repeats_ip_and_udp_headers() {
        let mut f = vec![0u8; VNET_HDR_LEN];
        f[1] = GSO_UDP_L4;
        f[4..6].copy_from_slice(&1200u16.to_le_bytes());
        let mut ip = vec![0u8; 28 + 3000];
        ip[0] = 0x45;
        f.extend_from_slice(&ip);
        let b = Bundle::parse(&f).unwrap();
        assert_eq!((b.segments, b.wire_len), (3, 3000 + 3 * 28));
    }

    #[test]
    fn malformed_frames_are_named() {
        assert!(Bundle::parse(&[0u8; 10]).unwrap_err().contains("too short"));
        let mut f = tcp_frame(GSO_TCPV4, 1448, 100);
        f[VNET_HDR_LEN] = 0x75;
        assert!(Bundle::parse(&f).unwrap_err().contains("IP version 7"));
        let mut f = tcp_frame(9, 1448, 100);
        f[1] = 9;
        assert!(Bundle::parse(&f).unwrap_err().contains("gso_type 9"));
    }
}
