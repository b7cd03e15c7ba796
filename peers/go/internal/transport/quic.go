package transport

import "github.com/quic-go/quic-go"

// QUICReading is one QUIC connection's reading from quic-go's ConnectionStats: PacketsSent,
// BytesSent (QUIC packet bytes, i.e. UDP payload, retransmissions included), PacketsLost,
// CongestionWindow, SmoothedRTT, MinRTT. quic-go (v0.65.0) counts no congestion events, no
// datagrams or send calls and no retransmission timeouts, so those stay absent.
func QUICReading(id uint64, stats quic.ConnectionStats) ConnReading {
	return ConnReading{
		ID:          id,
		PacketsSent: Some(stats.PacketsSent),
		BytesSent:   Some(stats.BytesSent),
		Lost:        Some(stats.PacketsLost),
		CwndBytes:   stats.CongestionWindow,
		SrttNs:      uint64(stats.SmoothedRTT.Nanoseconds()),
		MinRttNs:    Some(uint64(stats.MinRTT.Nanoseconds())),
	}
}

// QUICConn is the probe of the quic stack: its one connection.
type QUICConn struct{ Conn *quic.Conn }

// Transport is `quic`.
func (q QUICConn) Transport() string { return "quic" }

// Read reads the connection's statistics (atomics and the RTT estimator; quic-go allows it
// concurrently with the connection's own work).
func (q QUICConn) Read() []ConnReading {
	return []ConnReading{QUICReading(0, q.Conn.ConnectionStats())}
}
