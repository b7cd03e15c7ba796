// The quic stack's shared pieces: its settings (docs/stacks.md "quic"), the event loop both roles
// run on (epoll + timerfd + eventfd), the GnuTLS set-up, and QuicConnection: one ngtcp2 connection
// with its stream send buffers, its read and write paths and its timer.
//
// Why one loop thread per connection: an ngtcp2 connection is not thread-safe, and all of a
// client's lanes share one connection, so its packets, crypto, framing, protobuf and validation
// all run on that connection's thread anyway (handing work to another thread costs a wake-up of
// ~20 us on this project's VMs, more than the work). The server runs one loop per CPU, each with
// its own SO_REUSEPORT socket, so that several connections use several cores.
#pragma once

#include <gnutls/gnutls.h>
#include <ngtcp2/ngtcp2.h>
#include <ngtcp2/ngtcp2_crypto.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "net.h"
#include "transport.h"

namespace rpcarena {

inline constexpr uint64_t kQuicWindow = 16 * 1024 * 1024;
inline constexpr uint64_t kQuicMaxStreams = 10000;
inline constexpr int kUdpBuffer = 8 * 1024 * 1024;
inline constexpr uint64_t kQuicIdleMs = 30000;
inline constexpr uint64_t kQuicKeepAliveMs = 10000;
inline constexpr const char* kAlpn = "rpcarena/1";
// GnuTLS priorities: TLS 1.3 only, X25519 only, AES-256-GCM preferred; no compatibility mode
// (QUIC forbids it).
inline constexpr const char* kPriority =
    "NORMAL:-VERS-ALL:+VERS-TLS1.3:-CIPHER-ALL:+AES-256-GCM:+AES-128-GCM:+CHACHA20-POLY1305:"
    "-GROUP-ALL:+GROUP-X25519:%DISABLE_TLS13_COMPAT_MODE";

std::vector<std::string> quic_deviations();

// --- The event loop -------------------------------------------------------------------------------
class Loop {
 public:
  using Handler = std::function<void(uint32_t events)>;
  Loop();
  ~Loop();
  void add(int fd, uint32_t events, Handler* handler);
  void remove(int fd);
  // Thread-safe: runs `fn` on the loop thread.
  void post(std::function<void()> fn);
  // Runs until stop(); `after_events` runs after every batch of events (deferred writes).
  void run(const std::function<void()>& after_events);
  void stop();  // thread-safe

 private:
  int epfd_ = -1;
  int eventfd_ = -1;
  bool stopping_ = false;
  std::mutex m_;
  std::vector<std::function<void()>> posted_;
  Handler wake_handler_;
};

// A timerfd that fires once at an absolute CLOCK_MONOTONIC time.
class Timer {
 public:
  Timer();
  ~Timer();
  int fd() const { return fd_; }
  void arm_at(int64_t at_ns);
  void drain();

 private:
  int fd_ = -1;
  int64_t armed_ = -1;
};

// --- TLS ------------------------------------------------------------------------------------------
struct TlsConfig {
  gnutls_certificate_credentials_t cred = nullptr;
};
// Client credentials trusting only `ca_pem`; throws std::runtime_error.
TlsConfig tls_client_config(const std::string& ca_pem);
// Server credentials from the PEM chain and PKCS#8 key; throws std::runtime_error.
TlsConfig tls_server_config(const std::string& cert_pem, const std::string& key_pem);

// --- Send buffers -------------------------------------------------------------------------------
// The sending half of one stream. ngtcp2 does not copy stream data: bytes handed to it stay here,
// unmoved, until acknowledged.
class SendStream {
 public:
  virtual ~SendStream() = default;
  int64_t id = -1;
  bool has_data() const { return unwritten() > 0 || (fin && !fin_written); }
  uint64_t unwritten() const { return appended_ - written_; }
  uint64_t unacked() const { return appended_ - acked_; }
  void append(std::string&& bytes);
  // The unwritten bytes as iovecs (at most `max`); `*all` tells whether they cover everything.
  size_t vecs(ngtcp2_vec* out, size_t max, bool* all) const;
  void consumed(size_t n);  // ngtcp2 took n more bytes
  void acked_to(uint64_t offset);
  bool fin = false;          // FIN follows the last appended byte
  bool fin_written = false;
  bool queued = false;       // in the connection's send queue
  // Produces more frames when the connection is about to write this stream (lazy streams).
  virtual void fill() {}

 private:
  std::deque<std::string> bufs_;
  uint64_t base_ = 0;  // stream offset of bufs_.front()
  uint64_t appended_ = 0, written_ = 0, acked_ = 0;
  size_t widx_ = 0, woff_ = 0;  // first unwritten byte: bufs_[widx_][woff_]
};

// --- One ngtcp2 connection --------------------------------------------------------------------
class QuicConnection {
 public:
  QuicConnection(Loop& loop, int fd, const SockAddr& local, const SockAddr& remote);
  virtual ~QuicConnection();

  ngtcp2_conn* conn() const { return conn_; }
  gnutls_session_t session() const { return session_; }
  // Feeds one received datagram; returns false when the connection is over.
  bool on_packet(const uint8_t* data, size_t len, const SockAddr& from);
  // Writes whatever ngtcp2 and the streams have to send, and re-arms the timer.
  void write();
  void on_timer();
  // Sends CONNECTION_CLOSE with an application error (0 = normal end) and marks the connection
  // closed.
  void close_with(uint64_t app_error, const std::string& reason);
  bool closed() const { return closed_; }
  const std::string& close_reason() const { return close_reason_; }
  void queue(SendStream* s);
  void unqueue(SendStream* s);
  // Appends bytes to a stream's send buffer, counting them against the send window.
  void append_to(SendStream* s, std::string&& bytes) {
    buffered_ += bytes.size();
    s->append(std::move(bytes));
  }
  int last_error() const { return last_error_; }
  // Total bytes appended to streams and not yet acknowledged (the send window's use).
  uint64_t buffered() const { return buffered_; }
  Timer& timer() { return timer_; }
  bool queue_empty() const { return sendq_.empty(); }
  // The connection's transport statistics now (loop thread), as reading `id`.
  ConnReading transport_reading(uint64_t id);

 protected:
  // Installs conn_ and session_ (called by the subclasses' set-up).
  void attach(ngtcp2_conn* conn, gnutls_session_t session);
  ngtcp2_callbacks base_callbacks() const;
  ngtcp2_settings base_settings() const;
  ngtcp2_transport_params base_params() const;

  // Stream events, on the loop thread, from inside ngtcp2 callbacks.
  virtual void on_stream_data(int64_t id, void* user, const uint8_t* data, size_t len, bool fin) = 0;
  virtual void on_stream_close(int64_t id, void* user, uint64_t app_error) = 0;
  virtual void on_stream_reset(int64_t id, void* user) = 0;
  // After read_pkt returns (outside callbacks): deferred work.
  virtual void after_read() {}
  // The connection is over (closed by either side, idle timeout, fatal error).
  virtual void on_closed(const std::string& why) = 0;
  void mark_closed(const std::string& why);
  // Why the handshake or the connection failed, in words (TLS reason when there is one).
  std::string failure_text(int liberr) const;
  bool tls_failed(int liberr) const;

  Loop& loop_;
  int fd_;
  SockAddr local_, remote_;
  ngtcp2_conn* conn_ = nullptr;
  gnutls_session_t session_ = nullptr;
  ngtcp2_crypto_conn_ref conn_ref_{};
  Timer timer_;
  bool closed_ = false;
  std::string close_reason_;
  uint64_t buffered_ = 0;
  int last_error_ = 0;
  friend struct QuicCallbacks;

 private:
  void send_packet(const uint8_t* data, size_t len);
  void send_batch(const uint8_t* data, size_t len, size_t segment);
  // The steps of write(): the next queued stream with data, one packet from it (or control
  // frames only), what the answer means for the stream, and the packets gathered for one send.
  SendStream* next_to_write();
  ngtcp2_ssize write_packet(SendStream* s, uint8_t* buf, size_t max, ngtcp2_tstamp ts,
                            ngtcp2_path_storage& ps, ngtcp2_pkt_info& pi);
  bool requeue(SendStream* s, ngtcp2_ssize n, std::vector<SendStream*>& blocked);
  struct PacketBatch;
  void track_congestion();
  // Transport statistics (loop thread): packets ngtcp2 wrote; datagrams, bytes and send calls the
  // kernel took; congestion events seen in ngtcp2's recovery start time (track_congestion).
  uint64_t tx_packets_ = 0, tx_datagrams_ = 0, tx_bytes_ = 0, tx_calls_ = 0;
  uint64_t cc_events_ = 0, cc_recovery_ts_ = UINT64_MAX, cc_cwnd_ = 0;
  void wait_writable();
  std::deque<SendStream*> sendq_;
};

// UDP generic receive offload on `fd` (quinn uses it too); harmless where unsupported.
void enable_gro(int fd);
// Receives one (possibly GRO-coalesced) datagram batch: returns its length (-1 when nothing is
// waiting) and sets `*segment` to the size of each datagram in it (the last may be shorter).
ssize_t receive_batch(int fd, uint8_t* buf, size_t cap, SockAddr* from, size_t* segment);

// Random bytes for connection IDs and tokens.
void random_bytes(uint8_t* out, size_t len);

}  // namespace rpcarena
