// Transport statistics of the client's connections over the window: the `sample` event's optional
// `transport` object (docs/peer-protocol.md "Transport statistics"), computed as the Rust peer
// does (crates/peer/src/transport/mod.rs).
//
// A ConnReading is one connection at one moment: cumulative counters and gauges, each present or
// not. The Tracker (pure) turns the reading at START, the polls during the window and the reading
// after the drain into TransportStats: counters are end minus start per connection, summed over
// connections (a connection new in the window counts from zero; a counter one connection lacks is
// absent); the congestion window is summed over connections at each poll (its minimum and mean
// over the polls, the end reading counting as one); RTTs are means over connections at the end;
// TCP's congestion events are polled entries into loss recovery.
//
// The thin I/O around it: TCP_INFO of one socket (decoded from the bytes the kernel filled), the
// registry of the client's TCP sockets (filled by the gRPC socket mutator) and the Poller thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "events.h"

namespace rpcarena {

// How often the gauges are polled during the window (the Rust peer's POLL_INTERVAL).
inline constexpr int64_t kTransportPollNs = 5 * 1000000;

struct ConnReading {
  uint64_t id = 0;  // stable within a probe (registration order)
  std::optional<uint64_t> packets_sent, bytes_sent, retransmitted, lost, timeouts;
  std::optional<uint64_t> congestion_events;  // cumulative, where the library counts them (QUIC)
  std::optional<bool> in_recovery;            // TCP: in TCP_CA_Recovery or TCP_CA_Loss now
  std::optional<uint64_t> cwnd_bytes, srtt_ns, min_rtt_ns, delivery_rate_bps;
  std::optional<uint64_t> busy_ns, rwnd_limited_ns, sndbuf_limited_ns;
  std::optional<uint64_t> datagrams_sent, send_calls;
};

struct TransportStats {
  std::string transport;  // "tcp" or "quic"
  uint64_t connections = 0;
  std::optional<uint64_t> polls, packets_sent, bytes_sent, retransmitted, lost, timeouts,
      congestion_events, cwnd_bytes, cwnd_min_bytes, cwnd_mean_bytes, srtt_ns, min_rtt_ns,
      delivery_rate_bps, busy_ns, rwnd_limited_ns, sndbuf_limited_ns, datagrams_sent, send_calls;
  // The `transport` object: decimal strings, absent fields left out, in the protocol's order.
  Json to_json() const;
};

class Tracker {
 public:
  Tracker(std::string transport, std::vector<ConnReading> start);
  void observe(const std::vector<ConnReading>& reading);
  TransportStats finish(const std::vector<ConnReading>& end);

 private:
  std::string transport_;
  std::vector<ConnReading> start_;
  uint64_t polls_ = 0;
  std::optional<uint64_t> cwnd_min_;
  unsigned __int128 cwnd_sum_ = 0;
  std::vector<std::pair<uint64_t, bool>> recovering_;
  uint64_t recovery_entries_ = 0;
};

// --- TCP_INFO ---------------------------------------------------------------------------------
// Byte offsets in the kernel's struct tcp_info (include/uapi/linux/tcp.h; Debian 12's header stops
// at tcpi_snd_wnd, Linux 6.7 added tcpi_total_rto at 240).
namespace tcpi {
inline constexpr size_t kCaState = 1, kSndMss = 16, kRtt = 68, kSndCwnd = 80, kTotalRetrans = 100,
                        kSegsOut = 136, kMinRtt = 148, kDeliveryRate = 160, kBusyTime = 168,
                        kRwndLimited = 176, kSndbufLimited = 184, kBytesSent = 200, kTotalRto = 240,
                        kSize = 248;
}
// Decodes the first `len` bytes of a struct tcp_info (what getsockopt filled); fields past `len`
// are absent. nullopt when even the base fields (through tcpi_segs_out) are missing.
std::optional<ConnReading> tcp_reading(const uint8_t* info, size_t len, uint64_t id);
// getsockopt(TCP_INFO) of `fd`, decoded.
std::optional<ConnReading> tcp_reading(int fd, uint64_t id);

// The client's TCP sockets: duplicates registered as connections open (a duplicate reads the same
// socket), closed by clear() before the connections close. Thread-safe.
namespace tcp_sockets {
void add(int fd);
std::vector<ConnReading> read();
void clear();
}  // namespace tcp_sockets

// --- The poller ---------------------------------------------------------------------------------
// Reads at construction (START), every kTransportPollNs on a thread of its own, and in finish().
class Poller {
 public:
  using Reader = std::function<std::vector<ConnReading>()>;
  Poller(std::string transport, Reader read);
  ~Poller();
  // Stops polling and reads the end; nullopt when there is no connection to report.
  std::optional<TransportStats> finish();

 private:
  Reader read_;
  std::mutex m_;
  std::condition_variable cv_;
  bool stop_ = false;
  Tracker tracker_;
  std::thread thread_;
};

}  // namespace rpcarena
