#include "quic_common.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <netinet/udp.h>
#include <atomic>
#include <stdexcept>

#include <gnutls/crypto.h>
#include <gnutls/x509.h>
#include <ngtcp2/ngtcp2_crypto_gnutls.h>

#include "clock.h"
#include "events.h"

namespace rpcarena {

std::vector<std::string> quic_deviations() { return {}; }

void random_bytes(uint8_t* out, size_t len) { gnutls_rnd(GNUTLS_RND_NONCE, out, len); }

void enable_gro(int fd) {
  int one = 1;
  setsockopt(fd, SOL_UDP, UDP_GRO, &one, sizeof one);
}

ssize_t receive_batch(int fd, uint8_t* buf, size_t cap, SockAddr* from, size_t* segment) {
  iovec iov{buf, cap};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg{};
  msg.msg_name = from->sa();
  msg.msg_namelen = sizeof from->storage;
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  ssize_t n = recvmsg(fd, &msg, MSG_DONTWAIT);
  if (n < 0) return -1;
  from->len = msg.msg_namelen;
  *segment = static_cast<size_t>(n);
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level == SOL_UDP && c->cmsg_type == UDP_GRO) {
      int size = 0;
      std::memcpy(&size, CMSG_DATA(c), sizeof size);
      if (size > 0) *segment = static_cast<size_t>(size);
    }
  }
  return n;
}

// --- Loop -------------------------------------------------------------------------------------

Loop::Loop() {
  epfd_ = epoll_create1(EPOLL_CLOEXEC);
  eventfd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (epfd_ < 0 || eventfd_ < 0) throw std::runtime_error(std::string("epoll: ") + std::strerror(errno));
  wake_handler_ = [this](uint32_t) {
    uint64_t n;
    while (read(eventfd_, &n, sizeof n) > 0) {
    }
    std::vector<std::function<void()>> work;
    {
      std::lock_guard<std::mutex> lock(m_);
      work.swap(posted_);
    }
    for (auto& fn : work) fn();
  };
  add(eventfd_, EPOLLIN, &wake_handler_);
}

Loop::~Loop() {
  if (eventfd_ >= 0) close(eventfd_);
  if (epfd_ >= 0) close(epfd_);
}

void Loop::add(int fd, uint32_t events, Handler* handler) {
  epoll_event ev{};
  ev.events = events;
  ev.data.ptr = handler;
  if (epoll_ctl(epfd_, EPOLL_CTL_ADD, fd, &ev) != 0) {
    throw std::runtime_error(std::string("epoll_ctl: ") + std::strerror(errno));
  }
}

void Loop::remove(int fd) { epoll_ctl(epfd_, EPOLL_CTL_DEL, fd, nullptr); }

void Loop::post(std::function<void()> fn) {
  {
    std::lock_guard<std::mutex> lock(m_);
    posted_.push_back(std::move(fn));
  }
  uint64_t one = 1;
  (void)!write(eventfd_, &one, sizeof one);
}

void Loop::run(const std::function<void()>& after_events) {
  // ngtcp2 paces packets with its expiry timer: a default 50 us timer slack would stretch every
  // pacing gap on a fast path.
  prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
  epoll_event events[64];
  while (!stopping_) {
    int n = epoll_wait(epfd_, events, 64, -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      diag(std::string("epoll_wait: ") + std::strerror(errno));
      break;
    }
    for (int i = 0; i < n; ++i) (*static_cast<Handler*>(events[i].data.ptr))(events[i].events);
    if (after_events) after_events();
  }
}

void Loop::stop() {
  post([this] { stopping_ = true; });
}

// --- Timer ------------------------------------------------------------------------------------

Timer::Timer() {
  fd_ = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  if (fd_ < 0) throw std::runtime_error(std::string("timerfd: ") + std::strerror(errno));
}
Timer::~Timer() {
  if (fd_ >= 0) close(fd_);
}
void Timer::arm_at(int64_t at) {
  if (at == armed_) return;
  armed_ = at;
  itimerspec spec{};
  if (at <= 0) at = 1;  // 0 would disarm
  spec.it_value.tv_sec = at / 1000000000;
  spec.it_value.tv_nsec = at % 1000000000;
  timerfd_settime(fd_, TFD_TIMER_ABSTIME, &spec, nullptr);
}
void Timer::drain() {
  uint64_t n;
  while (read(fd_, &n, sizeof n) > 0) {
  }
  armed_ = -1;
}

// --- TLS ----------------------------------------------------------------------------------------

namespace {
gnutls_datum_t datum(const std::string& s) {
  return gnutls_datum_t{reinterpret_cast<unsigned char*>(const_cast<char*>(s.data())),
                        static_cast<unsigned>(s.size())};
}
}  // namespace

TlsConfig tls_client_config(const std::string& ca_pem) {
  TlsConfig c;
  gnutls_certificate_allocate_credentials(&c.cred);
  gnutls_datum_t d = datum(ca_pem);
  int n = gnutls_certificate_set_x509_trust_mem(c.cred, &d, GNUTLS_X509_FMT_PEM);
  if (n <= 0) {
    throw std::runtime_error(n < 0 ? gnutls_strerror(n) : "no certificate in it");
  }
  return c;
}

TlsConfig tls_server_config(const std::string& cert_pem, const std::string& key_pem) {
  TlsConfig c;
  gnutls_certificate_allocate_credentials(&c.cred);
  gnutls_datum_t cert = datum(cert_pem), key = datum(key_pem);
  int rc = gnutls_certificate_set_x509_key_mem(c.cred, &cert, &key, GNUTLS_X509_FMT_PEM);
  if (rc < 0) throw std::runtime_error(gnutls_strerror(rc));
  return c;
}

// --- SendStream -------------------------------------------------------------------------------

void SendStream::append(std::string&& bytes) {
  if (bytes.empty()) return;
  appended_ += bytes.size();
  // Coalesce small frames into the last buffer while none of it has been handed to ngtcp2.
  if (!bufs_.empty() && widx_ == bufs_.size() - 1 && woff_ == 0 &&
      bufs_.back().size() + bytes.size() <= 65536) {
    bufs_.back().append(bytes);
    return;
  }
  bufs_.push_back(std::move(bytes));
}

size_t SendStream::vecs(ngtcp2_vec* out, size_t max, bool* all) const {
  size_t n = 0;
  size_t i = widx_, off = woff_;
  while (i < bufs_.size() && n < max) {
    const std::string& b = bufs_[i];
    out[n].base = reinterpret_cast<uint8_t*>(const_cast<char*>(b.data())) + off;
    out[n].len = b.size() - off;
    ++n;
    ++i;
    off = 0;
  }
  *all = i >= bufs_.size();
  return n;
}

void SendStream::consumed(size_t n) {
  written_ += n;
  while (n > 0 && widx_ < bufs_.size()) {
    size_t left = bufs_[widx_].size() - woff_;
    if (n < left) {
      woff_ += n;
      return;
    }
    n -= left;
    ++widx_;
    woff_ = 0;
  }
}

void SendStream::acked_to(uint64_t offset) {
  if (offset > acked_) acked_ = offset;
  while (!bufs_.empty() && widx_ > 0 && base_ + bufs_.front().size() <= acked_) {
    base_ += bufs_.front().size();
    bufs_.pop_front();
    --widx_;
  }
}

// --- QuicConnection -----------------------------------------------------------------------------

struct QuicCallbacks {
  static QuicConnection* self(void* user) { return static_cast<QuicConnection*>(user); }

  static int recv_stream_data(ngtcp2_conn* conn, uint32_t flags, int64_t id, uint64_t, const uint8_t* data,
                              size_t len, void* user, void* stream_user) {
    self(user)->on_stream_data(id, stream_user, data, len, flags & NGTCP2_STREAM_DATA_FLAG_FIN);
    // Every byte is consumed at once, so the windows stay at their full 16 MiB.
    ngtcp2_conn_extend_max_stream_offset(conn, id, len);
    ngtcp2_conn_extend_max_offset(conn, len);
    return 0;
  }
  static int acked(ngtcp2_conn*, int64_t, uint64_t offset, uint64_t len, void* user, void* stream_user) {
    if (stream_user) {
      auto* s = static_cast<SendStream*>(stream_user);
      uint64_t before = s->unacked();
      s->acked_to(offset + len);
      self(user)->buffered_ -= before - s->unacked();
    }
    return 0;
  }
  static int stream_close(ngtcp2_conn*, uint32_t, int64_t id, uint64_t app_error, void* user,
                          void* stream_user) {
    auto* c = self(user);
    if (stream_user) c->buffered_ -= static_cast<SendStream*>(stream_user)->unacked();
    c->on_stream_close(id, stream_user, app_error);
    return 0;
  }
  static int stream_reset(ngtcp2_conn*, int64_t id, uint64_t, uint64_t, void* user, void* stream_user) {
    self(user)->on_stream_reset(id, stream_user);
    return 0;
  }
  static int stream_stop_sending(ngtcp2_conn*, int64_t id, uint64_t, void* user, void* stream_user) {
    self(user)->on_stream_reset(id, stream_user);
    return 0;
  }
  static int extend_max_stream_data(ngtcp2_conn*, int64_t, uint64_t, void* user, void* stream_user) {
    if (stream_user) self(user)->queue(static_cast<SendStream*>(stream_user));
    return 0;
  }
  static void rand(uint8_t* dest, size_t len, const ngtcp2_rand_ctx*) { random_bytes(dest, len); }
  static ngtcp2_conn* get_conn(ngtcp2_crypto_conn_ref* ref) {
    return static_cast<QuicConnection*>(ref->user_data)->conn_;
  }
};

QuicConnection::QuicConnection(Loop& loop, int fd, const SockAddr& local, const SockAddr& remote)
    : loop_(loop), fd_(fd), local_(local), remote_(remote) {
  conn_ref_.get_conn = QuicCallbacks::get_conn;
  conn_ref_.user_data = this;
}

QuicConnection::~QuicConnection() {
  if (conn_) ngtcp2_conn_del(conn_);
  if (session_) gnutls_deinit(session_);
}

void QuicConnection::attach(ngtcp2_conn* conn, gnutls_session_t session) {
  conn_ = conn;
  session_ = session;
  gnutls_session_set_ptr(session_, &conn_ref_);
  ngtcp2_conn_set_tls_native_handle(conn_, session_);
  ngtcp2_conn_set_keep_alive_timeout(conn_, kQuicKeepAliveMs * NGTCP2_MILLISECONDS);
}

ngtcp2_callbacks QuicConnection::base_callbacks() const {
  ngtcp2_callbacks cb{};
  cb.recv_crypto_data = ngtcp2_crypto_recv_crypto_data_cb;
  cb.encrypt = ngtcp2_crypto_encrypt_cb;
  cb.decrypt = ngtcp2_crypto_decrypt_cb;
  cb.hp_mask = ngtcp2_crypto_hp_mask_cb;
  cb.recv_stream_data = QuicCallbacks::recv_stream_data;
  cb.acked_stream_data_offset = QuicCallbacks::acked;
  cb.stream_close = QuicCallbacks::stream_close;
  cb.stream_reset = QuicCallbacks::stream_reset;
  cb.stream_stop_sending = QuicCallbacks::stream_stop_sending;
  cb.extend_max_stream_data = QuicCallbacks::extend_max_stream_data;
  cb.rand = QuicCallbacks::rand;
  cb.update_key = ngtcp2_crypto_update_key_cb;
  cb.delete_crypto_aead_ctx = ngtcp2_crypto_delete_crypto_aead_ctx_cb;
  cb.delete_crypto_cipher_ctx = ngtcp2_crypto_delete_crypto_cipher_ctx_cb;
  cb.get_path_challenge_data = ngtcp2_crypto_get_path_challenge_data_cb;
  cb.version_negotiation = ngtcp2_crypto_version_negotiation_cb;
  return cb;
}

ngtcp2_settings QuicConnection::base_settings() const {
  ngtcp2_settings s;
  ngtcp2_settings_default(&s);
  s.initial_ts = static_cast<ngtcp2_tstamp>(now_ns());
  s.cc_algo = NGTCP2_CC_ALGO_CUBIC;
  // Receive windows fixed at 16 MiB: auto-tuning may not grow them past that.
  s.max_window = kQuicWindow;
  s.max_stream_window = kQuicWindow;
  s.handshake_timeout = 10 * NGTCP2_SECONDS;
  return s;
}

ngtcp2_transport_params QuicConnection::base_params() const {
  ngtcp2_transport_params p;
  ngtcp2_transport_params_default(&p);
  p.initial_max_data = kQuicWindow;
  p.initial_max_stream_data_bidi_local = kQuicWindow;
  p.initial_max_stream_data_bidi_remote = kQuicWindow;
  p.initial_max_stream_data_uni = kQuicWindow;
  p.initial_max_streams_uni = 0;
  p.max_idle_timeout = kQuicIdleMs * NGTCP2_MILLISECONDS;
  return p;
}

void QuicConnection::queue(SendStream* s) {
  if (s->queued || closed_) return;
  s->queued = true;
  sendq_.push_back(s);
}

void QuicConnection::unqueue(SendStream* s) {
  if (!s->queued) return;
  sendq_.erase(std::remove(sendq_.begin(), sendq_.end(), s), sendq_.end());
  s->queued = false;
}

bool QuicConnection::tls_failed(int liberr) const {
  if (liberr == NGTCP2_ERR_CRYPTO || liberr == NGTCP2_ERR_HANDSHAKE_TIMEOUT) return liberr == NGTCP2_ERR_CRYPTO;
  ngtcp2_connection_close_error e;
  ngtcp2_conn_get_connection_close_error(conn_, &e);
  // A CONNECTION_CLOSE from the peer carrying a TLS alert (0x100 + alert).
  return e.type == NGTCP2_CONNECTION_CLOSE_ERROR_CODE_TYPE_TRANSPORT && e.error_code >= 0x100 &&
         e.error_code <= 0x1ff;
}

std::string QuicConnection::failure_text(int liberr) const {
  std::string text = ngtcp2_strerror(liberr);
  unsigned status = gnutls_session_get_verify_cert_status(session_);
  if (status != 0) {
    gnutls_datum_t out{};
    if (gnutls_certificate_verification_status_print(status, GNUTLS_CRT_X509, &out, 0) == 0) {
      text = std::string("certificate verification failed: ") +
             std::string(reinterpret_cast<char*>(out.data), out.size);
      gnutls_free(out.data);
      while (!text.empty() && (text.back() == ' ' || text.back() == '\n')) text.pop_back();
    }
    return text;
  }
  uint8_t alert = ngtcp2_conn_get_tls_alert(conn_);
  if (liberr == NGTCP2_ERR_CRYPTO && alert != 0) {
    const char* a = gnutls_alert_get_strname(static_cast<gnutls_alert_description_t>(alert));
    text += std::string(" (TLS alert ") + (a ? a : std::to_string(alert)) + ")";
  }
  ngtcp2_connection_close_error e;
  ngtcp2_conn_get_connection_close_error(conn_, &e);
  if (liberr == NGTCP2_ERR_DRAINING || liberr == NGTCP2_ERR_CLOSING) {
    std::string reason(reinterpret_cast<const char*>(e.reason), e.reasonlen);
    if (e.type == NGTCP2_CONNECTION_CLOSE_ERROR_CODE_TYPE_TRANSPORT && e.error_code >= 0x100 &&
        e.error_code <= 0x1ff) {
      const char* a = gnutls_alert_get_strname(static_cast<gnutls_alert_description_t>(e.error_code - 0x100));
      text = std::string("the peer closed the connection with TLS alert ") + (a ? a : "?");
    } else {
      text = "the peer closed the connection (error " + std::to_string(e.error_code) +
             (reason.empty() ? "" : ", \"" + reason + "\"") + ")";
    }
  }
  return text;
}

bool QuicConnection::on_packet(const uint8_t* data, size_t len, const SockAddr& from) {
  if (closed_) return false;
  ngtcp2_path path{{const_cast<sockaddr*>(local_.sa()), local_.len},
                   {const_cast<sockaddr*>(from.sa()), from.len},
                   nullptr};
  ngtcp2_pkt_info pi{};
  int rv = ngtcp2_conn_read_pkt(conn_, &path, &pi, data, len, static_cast<ngtcp2_tstamp>(now_ns()));
  if (rv == 0) track_congestion();
  after_read();
  if (rv != 0) {
    if (rv == NGTCP2_ERR_DRAINING) {
      mark_closed(failure_text(rv));
      return false;
    }
    if (ngtcp2_err_is_fatal(rv) || rv == NGTCP2_ERR_CRYPTO) {
      std::string why = failure_text(rv);
      ngtcp2_connection_close_error e;
      ngtcp2_connection_close_error_default(&e);
      if (rv == NGTCP2_ERR_CRYPTO) {
        ngtcp2_connection_close_error_set_transport_error_tls_alert(&e, ngtcp2_conn_get_tls_alert(conn_), nullptr, 0);
      } else {
        ngtcp2_connection_close_error_set_transport_error_liberr(&e, rv, nullptr, 0);
      }
      uint8_t buf[1500];
      ngtcp2_path_storage ps;
      ngtcp2_path_storage_zero(&ps);
      ngtcp2_pkt_info wpi;
      ngtcp2_ssize n = ngtcp2_conn_write_connection_close(conn_, &ps.path, &wpi, buf, sizeof buf, &e,
                                                          static_cast<ngtcp2_tstamp>(now_ns()));
      if (n > 0) send_packet(buf, static_cast<size_t>(n));
      last_error_ = rv;
      mark_closed(why);
      return false;
    }
  }
  return true;
}

// ngtcp2 0.12 counts no congestion events, but each one (a loss, or ECN CE, outside the current
// recovery period) sets cstat.congestion_recovery_start_ts to the time passed to the call that found
// it, and only read_pkt and handle_expiry find them: a new value after one of those calls is one
// event. Persistent congestion resets the time to UINT64_MAX in the same call as its event and
// collapses the window: counted by the window falling while the time is unset (a spurious-loss
// undo also unsets it, but raises the window).
void QuicConnection::track_congestion() {
  ngtcp2_conn_stat st;
  ngtcp2_conn_get_conn_stat(conn_, &st);
  uint64_t ts = st.congestion_recovery_start_ts;
  if (ts != UINT64_MAX && ts != cc_recovery_ts_) {
    ++cc_events_;
  } else if (ts == UINT64_MAX && st.cwnd < cc_cwnd_) {
    ++cc_events_;
  }
  cc_recovery_ts_ = ts;
  cc_cwnd_ = st.cwnd;
}

ConnReading QuicConnection::transport_reading(uint64_t id) {
  ngtcp2_conn_stat st;
  ngtcp2_conn_get_conn_stat(conn_, &st);
  ConnReading r;
  r.id = id;
  r.packets_sent = tx_packets_;
  r.bytes_sent = tx_bytes_;
  r.congestion_events = cc_events_;
  r.cwnd_bytes = st.cwnd;
  r.srtt_ns = st.smoothed_rtt;
  if (st.min_rtt != UINT64_MAX) r.min_rtt_ns = st.min_rtt;
  r.delivery_rate_bps = st.delivery_rate_sec * 8;
  r.datagrams_sent = tx_datagrams_;
  r.send_calls = tx_calls_;
  return r;
}

void QuicConnection::mark_closed(const std::string& why) {
  if (closed_) return;
  closed_ = true;
  close_reason_ = why;
  sendq_.clear();
  on_closed(why);
}

void QuicConnection::send_packet(const uint8_t* data, size_t len) { send_batch(data, len, len); }

// Sends `len` bytes of packets of `segment` bytes each (the last may be shorter) with one
// sendmsg and UDP generic segmentation offload, as quinn does; without GSO, one sendto each.
void QuicConnection::send_batch(const uint8_t* data, size_t len, size_t segment) {
  static std::atomic<bool> gso{true};
  if (len > segment && gso.load(std::memory_order_relaxed)) {
    iovec iov{const_cast<uint8_t*>(data), len};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(uint16_t))] = {};
    msghdr msg{};
    msg.msg_name = const_cast<sockaddr*>(remote_.sa());
    msg.msg_namelen = remote_.len;
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_UDP;
    c->cmsg_type = UDP_SEGMENT;
    c->cmsg_len = CMSG_LEN(sizeof(uint16_t));
    uint16_t seg = static_cast<uint16_t>(segment);
    std::memcpy(CMSG_DATA(c), &seg, sizeof seg);
    for (;;) {
      ssize_t n = sendmsg(fd_, &msg, 0);
      if (n >= 0) {
        tx_datagrams_ += (len + segment - 1) / segment;
        tx_bytes_ += len;
        ++tx_calls_;
        return;
      }
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        wait_writable();
        continue;
      }
      if (errno == EIO || errno == EINVAL || errno == EOPNOTSUPP) {
        gso.store(false);  // no GSO here: fall back to one packet per call
        break;
      }
      return;
    }
  }
  for (size_t off = 0; off < len; off += segment) {
    size_t n = std::min(segment, len - off);
    for (;;) {
      ssize_t sent = sendto(fd_, data + off, n, 0, remote_.sa(), remote_.len);
      if (sent >= 0) {
        ++tx_datagrams_;
        tx_bytes_ += n;
        ++tx_calls_;
        break;
      }
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        wait_writable();
        continue;
      }
      break;  // ECONNREFUSED and the like: QUIC's loss recovery or idle timeout handles it
    }
  }
}

// The socket buffer is full (8 MiB): wait for it briefly rather than lose the packet.
void QuicConnection::wait_writable() {
  fd_set w;
  FD_ZERO(&w);
  FD_SET(fd_, &w);
  timeval tv{0, 10000};
  select(fd_ + 1, nullptr, &w, nullptr, &tv);
}

// Packets accumulate in `buf` while they have the size of the first (GSO needs equal segments; a
// shorter one ends the batch).
struct QuicConnection::PacketBatch {
  QuicConnection& conn;
  uint8_t* buf;
  size_t cap;
  size_t len = 0, segment = 0;

  uint8_t* end() const { return buf + len; }
  bool has_room(size_t max_udp) const { return len + max_udp <= cap; }
  void flush() {
    if (len > 0) conn.send_batch(buf, len, segment);
    len = 0;
    segment = 0;
  }
  // Takes the packet of `n` bytes just written at end().
  void add(size_t n) {
    uint8_t* packet = end();
    if (segment == 0) segment = n;
    if (n > segment) {
      // Larger than the batch's segments: send the batch, start a new one with this packet.
      conn.send_batch(buf, len, segment);
      std::memmove(buf, packet, n);
      len = n;
      segment = n;
    } else {
      len += n;
      if (n < segment) flush();  // a shorter packet may only be the last segment
    }
  }
};

SendStream* QuicConnection::next_to_write() {
  while (!sendq_.empty()) {
    SendStream* s = sendq_.front();
    sendq_.pop_front();
    s->queued = false;
    if (s->unwritten() < 65536) s->fill();
    if (s->has_data()) return s;
  }
  return nullptr;
}

// One ngtcp2_conn_writev_stream call with what `s` (if any) has unwritten; counts what it took.
ngtcp2_ssize QuicConnection::write_packet(SendStream* s, uint8_t* buf, size_t max, ngtcp2_tstamp ts,
                                          ngtcp2_path_storage& ps, ngtcp2_pkt_info& pi) {
  ngtcp2_vec v[16];
  bool all = true;
  size_t nv = 0;
  int64_t sid = -1;
  uint32_t flags = NGTCP2_WRITE_STREAM_FLAG_MORE;
  if (s) {
    sid = s->id;
    nv = s->vecs(v, 16, &all);
    if (s->fin && all) flags |= NGTCP2_WRITE_STREAM_FLAG_FIN;
  }
  ngtcp2_ssize datalen = -1;
  ngtcp2_ssize n = ngtcp2_conn_writev_stream(conn_, &ps.path, &pi, buf, max, &datalen, flags, sid, v,
                                             nv, ts);
  if (s && datalen >= 0) {
    size_t total = 0;
    for (size_t i = 0; i < nv; ++i) total += v[i].len;
    s->consumed(static_cast<size_t>(datalen));
    if ((flags & NGTCP2_WRITE_STREAM_FLAG_FIN) && static_cast<size_t>(datalen) == total) s->fin_written = true;
  }
  return n;
}

// What the answer `n` means for the stream written: true when it is settled and writing goes on
// (blocked by flow control: tried again on the next write; shut or gone: dropped); otherwise it
// goes back in the queue while it has data.
bool QuicConnection::requeue(SendStream* s, ngtcp2_ssize n, std::vector<SendStream*>& blocked) {
  if (n == NGTCP2_ERR_STREAM_DATA_BLOCKED) {
    blocked.push_back(s);
    s->queued = true;
    return true;
  }
  if (n == NGTCP2_ERR_STREAM_SHUT_WR || n == NGTCP2_ERR_STREAM_NOT_FOUND) return true;
  if (s->has_data()) queue(s);
  return false;
}

void QuicConnection::write() {
  if (closed_ || !conn_) return;
  if (ngtcp2_conn_is_in_closing_period(conn_) || ngtcp2_conn_is_in_draining_period(conn_)) return;
  ngtcp2_tstamp ts = static_cast<ngtcp2_tstamp>(now_ns());
  size_t max_udp = ngtcp2_conn_get_path_max_tx_udp_payload_size(conn_);
  size_t max_pkts = std::max<size_t>(1, ngtcp2_conn_get_send_quantum(conn_) / max_udp);
  static thread_local uint8_t buf[65536];
  PacketBatch batch{*this, buf, sizeof buf};
  ngtcp2_path_storage ps;
  ngtcp2_path_storage_zero(&ps);
  ngtcp2_pkt_info pi{};
  std::vector<SendStream*> blocked;
  size_t packets = 0;
  for (;;) {
    if (!batch.has_room(max_udp)) batch.flush();
    SendStream* s = next_to_write();
    ngtcp2_ssize n = write_packet(s, batch.end(), max_udp, ts, ps, pi);
    if (s && requeue(s, n, blocked)) continue;
    if (n == NGTCP2_ERR_WRITE_MORE || n == NGTCP2_ERR_STREAM_DATA_BLOCKED ||
        n == NGTCP2_ERR_STREAM_SHUT_WR || n == NGTCP2_ERR_STREAM_NOT_FOUND) {
      continue;
    }
    if (n < 0) {
      last_error_ = static_cast<int>(n);
      close_with(0, "");
      mark_closed(std::string("writing failed: ") + ngtcp2_strerror(static_cast<int>(n)));
      return;
    }
    if (n == 0) break;
    ++tx_packets_;
    batch.add(static_cast<size_t>(n));
    if (++packets >= max_pkts) break;
  }
  batch.flush();
  for (SendStream* s : blocked) {
    s->queued = false;
    queue(s);
  }
  ngtcp2_conn_update_pkt_tx_time(conn_, ts);
  timer_.arm_at(static_cast<int64_t>(ngtcp2_conn_get_expiry(conn_)));
}

void QuicConnection::on_timer() {
  timer_.drain();
  if (closed_) return;
  int rv = ngtcp2_conn_handle_expiry(conn_, static_cast<ngtcp2_tstamp>(now_ns()));
  if (rv == 0) track_congestion();
  if (rv != 0) {
    mark_closed(rv == NGTCP2_ERR_IDLE_CLOSE ? "the connection was idle for 30 s and closed"
                                            : failure_text(rv));
    return;
  }
  write();
}

void QuicConnection::close_with(uint64_t app_error, const std::string& reason) {
  if (!conn_ || ngtcp2_conn_is_in_closing_period(conn_) || ngtcp2_conn_is_in_draining_period(conn_)) return;
  ngtcp2_connection_close_error e;
  ngtcp2_connection_close_error_default(&e);
  ngtcp2_connection_close_error_set_application_error(
      &e, app_error, reinterpret_cast<const uint8_t*>(reason.data()), reason.size());
  uint8_t buf[1500];
  ngtcp2_path_storage ps;
  ngtcp2_path_storage_zero(&ps);
  ngtcp2_pkt_info pi;
  ngtcp2_ssize n = ngtcp2_conn_write_connection_close(conn_, &ps.path, &pi, buf, sizeof buf, &e,
                                                      static_cast<ngtcp2_tstamp>(now_ns()));
  if (n > 0) send_packet(buf, static_cast<size_t>(n));
}

}  // namespace rpcarena
