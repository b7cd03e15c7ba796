// The quic stack's client: one QUIC connection (ngtcp2 + GnuTLS) on its own event-loop thread,
// every lane multiplexed on it, one client-opened bidirectional stream per operation, the native
// framing of docs/stacks.md byte for byte, every response checked.
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <future>
#include <thread>

#include <ngtcp2/ngtcp2_crypto_gnutls.h>

#include "clock.h"
#include "framing.h"
#include "quic_common.h"
#include "stacks.h"
#include "workload.h"

namespace rpcarena {

namespace {

constexpr size_t kFillBelow = 65536;        // produce more requests while less is unwritten
constexpr uint64_t kSaturationBatch = 32768;  // the framing writer's flush threshold

class QuicClient;

// One operation (or one send-saturation stream) on one stream.
class ClientCall final : public SendStream {
 public:
  ClientCall(QuicClient* client, uint64_t seq, OpSink* sink, SaturationSink* sat)
      : client_(client), seq_(seq), sink_(sink), sat_(sat) {}
  void begin();
  void fill() override;
  void on_data(const uint8_t* data, size_t len, bool fin);
  // Ends the operation with `r` (once); a failure also resets the stream.
  void finish(OpResult&& r);
  bool reported() const { return reported_; }
  OpSink* sink() const { return sink_; }
  std::string describe() const {
    return "stream " + std::to_string(id) + " seq " + std::to_string(seq_) + ": produced " +
           std::to_string(produced_) + ", responses " + std::to_string(got_) + ", status " +
           (status_ok_ ? "ok" : "none") + ", unwritten " + std::to_string(unwritten()) +
           ", unacked " + std::to_string(unacked()) + ", fin " + (fin ? "set" : "no") +
           (fin_written ? " written" : "") + ", queued " + (queued ? "yes" : "no") +
           ", received bytes pending " + std::to_string(reader_.pending());
  }
  SaturationSink* sat() const { return sat_; }
  bool stream_closed = false;

 private:
  bool handle_frame(const Frame& f);
  void check_message(const Frame& f);
  void fail(const char* code, std::string message) { finish(OpResult::failure(code, std::move(message))); }
  uint64_t expected_responses() const;

  QuicClient* client_;
  uint64_t seq_;
  OpSink* sink_;
  SaturationSink* sat_;
  FrameReader reader_;
  uint64_t produced_ = 0;  // requests appended
  uint64_t got_ = 0;       // responses received
  uint64_t bytes_ = 0;     // their payload bytes
  bool status_ok_ = false;
  bool reported_ = false;
  // send-saturation: the message the engine started and the transport has not taken yet
  bool pending_ = false;
  std::string pending_frame_;
  pb::Request request_;
  pb::Response response_;
  pb::Summary summary_;
};

class QuicClient final : public ClosableStack, public QuicConnection {
 public:
  QuicClient(const ClientArgs& args, Loop& loop, int fd, const SockAddr& local, const SockAddr& remote,
             Wakeup& wakeup)
      : QuicConnection(loop, fd, local, remote), args_(args), wakeup_(wakeup) {}

  // On the loop thread: the ngtcp2 connection and the TLS session; sends the first flight.
  void open(const TlsConfig& tls);

  // ClientStack (all on the loop thread, which is where the engine calls them through post()).
  void start(uint64_t seq, OpSink* sink) override { launch(new ClientCall(this, seq, sink, nullptr)); }
  void start_saturation(SaturationSink* sink) override {
    launch(new ClientCall(this, 0, nullptr, sink));
  }
  bool accepts_call() override {
    return !closed() && waiting_.empty() && ngtcp2_conn_get_streams_bidi_left(conn_) > 0;
  }
  void set_ready_hook(std::function<void()> hook) override { ready_hook_ = std::move(hook); }
  void post(std::function<void()> fn) override { loop_.post(std::move(fn)); }
  void close() override;
  // ngtcp2's connection statistics and the send path's own counts, read on the loop thread (the
  // connection belongs to it); none when the connection is closed or the loop does not answer.
  std::string transport() const override { return "quic"; }
  std::vector<ConnReading> read_transport() override {
    auto p = std::make_shared<std::promise<std::vector<ConnReading>>>();
    auto f = p->get_future();
    loop_.post([this, p] {
      std::vector<ConnReading> out;
      if (!closed() && conn_) out.push_back(transport_reading(0));
      p->set_value(std::move(out));
    });
    if (f.wait_for(std::chrono::seconds(1)) != std::future_status::ready) return {};
    return f.get();
  }
  std::string describe_in_flight() override {
    std::promise<std::string> p;
    auto f = p.get_future();
    loop_.post([this, &p] {
      std::string out;
      for (ClientCall* c : live_) {
        if (!c->reported()) out += " [" + c->describe() + "]";
      }
      out += " waiting for stream credit: " + std::to_string(waiting_.size()) +
             ", send queue empty: " + std::string(queue_empty() ? "yes" : "no");
      p.set_value(out);
    });
    if (f.wait_for(std::chrono::seconds(1)) != std::future_status::ready) return " (loop busy)";
    return f.get();
  }

  const ClientArgs& args() const { return args_; }
  void completed(ClientCall* call, OpResult&& r) { done_.emplace_back(call, std::move(r)); }
  void shutdown_stream(int64_t id) { ngtcp2_conn_shutdown_stream(conn_, id, 1); }
  // Handshake state, read by the main thread while connecting.
  std::atomic<bool> handshake_done{false};
  std::atomic<bool> failed{false};
  std::string failure;  // set before `failed`
  bool failure_tls = false;
  void on_readable();
  void loop_run() {
    loop_.run([this] { after_events(); });
  }
  void after_events() {
    after_read();
    write();
  }

 protected:
  void on_stream_data(int64_t, void* user, const uint8_t* data, size_t len, bool fin) override {
    if (user) static_cast<ClientCall*>(user)->on_data(data, len, fin);
  }
  void on_stream_close(int64_t, void* user, uint64_t) override {
    if (!user) return;
    auto* call = static_cast<ClientCall*>(user);
    call->stream_closed = true;
    if (!call->reported()) {
      call->finish(OpResult::failure(code::kConnect, "the stream closed before STATUS"));
    }
    closed_calls_.push_back(call);
  }
  void on_stream_reset(int64_t, void* user) override {
    if (user) {
      static_cast<ClientCall*>(user)->finish(
          OpResult::failure(code::kConnect, "the server reset the stream before STATUS"));
    }
  }
  void after_read() override;
  void on_closed(const std::string& why) override;

 public:
  static int on_handshake_completed(ngtcp2_conn*, void* user) {
    auto* self = static_cast<QuicClient*>(static_cast<QuicConnection*>(user));
    self->handshake_done.store(true);
    self->wakeup_.notify();
    return 0;
  }
  static int on_extend_streams(ngtcp2_conn*, uint64_t, void* user) {
    static_cast<QuicClient*>(static_cast<QuicConnection*>(user))->credit_ = true;
    return 0;
  }
  static int on_new_cid(ngtcp2_conn*, ngtcp2_cid* cid, uint8_t* token, size_t len, void*) {
    random_bytes(cid->data, len);
    cid->datalen = len;
    random_bytes(token, NGTCP2_STATELESS_RESET_TOKENLEN);
    return 0;
  }

 private:
  void launch(ClientCall* call);
  bool open_stream(ClientCall* call);

  const ClientArgs& args_;
  Wakeup& wakeup_;
  std::function<void()> ready_hook_;
  std::deque<ClientCall*> waiting_;  // no stream credit yet
  std::vector<std::pair<ClientCall*, OpResult>> done_;
  std::vector<ClientCall*> closed_calls_;
  std::vector<ClientCall*> live_;  // every call not yet deleted (to fail them if the connection ends)
  bool credit_ = false;
  Loop::Handler read_handler_;
  Loop::Handler timer_handler_;
};

// --- ClientCall -----------------------------------------------------------------------------------

uint64_t ClientCall::expected_responses() const {
  Shape s = client_->args().shape;
  return (s == Shape::kServerStream || s == Shape::kBidi) && !sat_ ? client_->args().messages : 1;
}

void ClientCall::begin() {
  const ClientArgs& a = client_->args();
  std::string out;
  const char* path = method_path(sat_ ? Shape::kClientStream : a.shape);
  append_frame(out, FrameType::kHeader, path, std::strlen(path));
  if (!sat_ && (a.shape == Shape::kUnary || a.shape == Shape::kServerStream)) {
    build_request(&request_, a.payload, seq_, a.request_size, a.response_size,
                  a.shape == Shape::kServerStream ? a.messages : 0);
    append_message(out, FrameType::kMessage, request_);
    append_frame(out, FrameType::kEnd, nullptr, 0);
    fin = true;
    produced_ = 1;
  }
  client_->append_to(this, std::move(out));
}

void ClientCall::fill() {
  if (fin || reported_) return;
  const ClientArgs& a = client_->args();
  if (sat_) {
    for (;;) {
      if (!pending_) {
        if (!sat_->want_message()) {
          std::string end;
          append_frame(end, FrameType::kEnd, nullptr, 0);
          client_->append_to(this, std::move(end));
          fin = true;
          return;
        }
        build_request(&request_, a.payload, produced_, a.request_size, a.response_size, 0);
        pending_frame_.clear();
        append_message(pending_frame_, FrameType::kMessage, request_);
        pending_ = true;
      }
      // Accepted when the writer has room: less than 32 KiB unwritten on the stream and the
      // connection's send window (16 MiB unacknowledged) not full.
      if (unwritten() >= kSaturationBatch || client_->buffered() >= kQuicWindow) return;
      client_->append_to(this, std::move(pending_frame_));
      pending_frame_ = std::string();
      pending_ = false;
      ++produced_;
      sat_->message_accepted();
    }
  }
  // client stream and bidi: the N requests, produced as the stream drains
  std::string out;
  while (produced_ < a.messages && unwritten() + out.size() < kFillBelow) {
    build_request(&request_, a.payload, produced_, a.request_size, a.response_size, 0);
    append_message(out, FrameType::kMessage, request_);
    ++produced_;
  }
  if (produced_ == a.messages) {
    append_frame(out, FrameType::kEnd, nullptr, 0);
    fin = true;
  }
  client_->append_to(this, std::move(out));
}

void ClientCall::on_data(const uint8_t* data, size_t len, bool fin_in) {
  if (reported_) return;
  reader_.feed(data, len);
  Frame f;
  std::string error;
  for (;;) {
    FrameReader::Result r = reader_.next(&f, &error);
    if (r == FrameReader::Result::kNeedMore) break;
    if (r == FrameReader::Result::kError) {
      fail(code::kInvalid, "malformed frame from the server: " + error);
      return;
    }
    if (!handle_frame(f)) return;
  }
  if (fin_in) {
    if (!status_ok_) {
      fail(code::kConnect, reader_.pending() > 0 ? "the stream ended inside a frame, before STATUS"
                                                 : "the server closed the stream before sending STATUS");
      return;
    }
    OpResult ok;
    ok.ok = true;
    const ClientArgs& a = client_->args();
    bool streams_requests = sat_ || a.shape == Shape::kClientStream || a.shape == Shape::kBidi;
    ok.requests = sat_ ? produced_ : (streams_requests ? a.messages : 1);
    ok.request_bytes = ok.requests * a.request_size;
    ok.responses = got_;
    ok.response_bytes = bytes_;
    finish(std::move(ok));
  }
}

bool ClientCall::handle_frame(const Frame& f) {
  if (status_ok_) {
    fail(code::kInvalid, std::string("the server sent a ") + frame_name(f.type) + " frame after STATUS");
    return false;
  }
  switch (f.type) {
    case FrameType::kMessage:
      check_message(f);
      return !reported_;
    case FrameType::kStatus: {
      pb::Status st;
      if (!st.ParseFromArray(f.body, static_cast<int>(f.len))) {
        fail(code::kInvalid, "undecodable STATUS frame");
        return false;
      }
      if (st.code() != 0) {
        fail(code::kRpc, "status " + std::to_string(st.code()) + ": " + st.message());
        return false;
      }
      if (got_ != expected_responses()) {
        fail(code::kInvalid, "STATUS OK after " + std::to_string(got_) + " of " +
                                 std::to_string(expected_responses()) + " responses");
        return false;
      }
      status_ok_ = true;
      return true;
    }
    default:
      fail(code::kInvalid, std::string("the server sent a ") + frame_name(f.type) +
                               " frame, which only a client may send");
      return false;
  }
}

void ClientCall::check_message(const Frame& f) {
  const ClientArgs& a = client_->args();
  if (got_ >= expected_responses()) {
    fail(code::kInvalid, "more than " + std::to_string(expected_responses()) + " responses");
    return;
  }
  bool summary = sat_ || a.shape == Shape::kClientStream;
  std::string error;
  if (summary) {
    if (!summary_.ParseFromArray(f.body, static_cast<int>(f.len))) {
      fail(code::kInvalid, "undecodable Summary message");
      return;
    }
    uint64_t messages = sat_ ? produced_ : a.messages;
    error = check_summary(summary_, a.payload, messages, a.request_size, a.response_size);
    bytes_ += payload_len(summary_.payload(), summary_.has_body() ? &summary_.body() : nullptr);
  } else {
    if (!response_.ParseFromArray(f.body, static_cast<int>(f.len))) {
      fail(code::kInvalid, "undecodable Response message");
      return;
    }
    uint64_t want = a.shape == Shape::kUnary ? seq_ : got_;
    error = check_response(response_, a.payload, want, a.response_size);
    bytes_ += payload_len(response_.payload(), response_.has_body() ? &response_.body() : nullptr);
  }
  if (!error.empty()) {
    fail(code::kInvalid, error);
    return;
  }
  ++got_;
}

void ClientCall::finish(OpResult&& r) {
  if (reported_) return;
  reported_ = true;
  if (!r.ok && id >= 0 && !stream_closed) client_->shutdown_stream(id);
  client_->completed(this, std::move(r));
}

// --- QuicClient -----------------------------------------------------------------------------------

void QuicClient::open(const TlsConfig& tls) {
  ngtcp2_cid dcid, scid;
  dcid.datalen = 18;
  random_bytes(dcid.data, dcid.datalen);
  scid.datalen = 17;
  random_bytes(scid.data, scid.datalen);
  ngtcp2_path path{{const_cast<sockaddr*>(local_.sa()), local_.len},
                   {const_cast<sockaddr*>(remote_.sa()), remote_.len},
                   nullptr};
  ngtcp2_callbacks cb = base_callbacks();
  cb.client_initial = ngtcp2_crypto_client_initial_cb;
  cb.recv_retry = ngtcp2_crypto_recv_retry_cb;
  cb.handshake_completed = on_handshake_completed;
  cb.extend_max_local_streams_bidi = on_extend_streams;
  cb.get_new_connection_id = on_new_cid;
  ngtcp2_settings settings = base_settings();
  ngtcp2_transport_params params = base_params();
  params.initial_max_streams_bidi = 0;  // the server never opens a stream
  ngtcp2_conn* conn = nullptr;
  int rv = ngtcp2_conn_client_new(&conn, &dcid, &scid, &path, NGTCP2_PROTO_VER_V1, &cb, &settings,
                                  &params, nullptr, static_cast<QuicConnection*>(this));
  if (rv != 0) throw std::runtime_error(std::string("ngtcp2_conn_client_new: ") + ngtcp2_strerror(rv));

  gnutls_session_t session = nullptr;
  gnutls_init(&session, GNUTLS_CLIENT | GNUTLS_NO_END_OF_EARLY_DATA | GNUTLS_NO_TICKETS);
  if (ngtcp2_crypto_gnutls_configure_client_session(session) != 0) {
    throw std::runtime_error("ngtcp2_crypto_gnutls_configure_client_session failed");
  }
  if (int e = gnutls_priority_set_direct(session, kPriority, nullptr); e != 0) {
    throw std::runtime_error(std::string("gnutls_priority_set_direct: ") + gnutls_strerror(e));
  }
  gnutls_credentials_set(session, GNUTLS_CRD_CERTIFICATE, tls.cred);
  gnutls_datum_t alpn{reinterpret_cast<unsigned char*>(const_cast<char*>(kAlpn)),
                      static_cast<unsigned>(std::strlen(kAlpn))};
  gnutls_alpn_set_protocols(session, &alpn, 1, GNUTLS_ALPN_MANDATORY);
  const std::string& name = args_.server_name;
  if (!is_ip_literal(name)) gnutls_server_name_set(session, GNUTLS_NAME_DNS, name.data(), name.size());
  // Verified during the handshake: chain to --ca, and --server-name against the SAN (a DNS name,
  // or an IP address matched against IP SANs).
  gnutls_session_set_verify_cert(session, name.c_str(), 0);
  attach(conn, session);

  read_handler_ = [this](uint32_t) { on_readable(); };
  timer_handler_ = [this](uint32_t) { on_timer(); };
  loop_.add(fd_, EPOLLIN, &read_handler_);
  loop_.add(timer().fd(), EPOLLIN, &timer_handler_);
  write();
}

void QuicClient::on_readable() {
  static thread_local uint8_t buf[65536];
  for (int i = 0; i < 64; ++i) {
    SockAddr from;
    size_t segment = 0;
    ssize_t n = receive_batch(fd_, buf, sizeof buf, &from, &segment);
    if (n < 0) return;
    for (size_t off = 0; off < static_cast<size_t>(n); off += segment) {
      size_t len = std::min(segment, static_cast<size_t>(n) - off);
      if (!on_packet(buf + off, len, from)) return;
    }
  }
}

void QuicClient::launch(ClientCall* call) {
  live_.push_back(call);
  if (closed()) {
    call->finish(OpResult::failure(code::kConnect, "the connection is closed: " + close_reason()));
    return;
  }
  if (!waiting_.empty() || !open_stream(call)) waiting_.push_back(call);
}

bool QuicClient::open_stream(ClientCall* call) {
  int64_t id = -1;
  int rv = ngtcp2_conn_open_bidi_stream(conn_, &id, static_cast<SendStream*>(call));
  if (rv == NGTCP2_ERR_STREAM_ID_BLOCKED) return false;
  if (rv != 0) {
    call->finish(OpResult::failure(code::kConnect, std::string("cannot open a stream: ") + ngtcp2_strerror(rv)));
    return true;
  }
  call->id = id;
  call->begin();
  queue(call);
  return true;
}

void QuicClient::after_read() {
  if (credit_) {
    credit_ = false;
    while (!waiting_.empty() && !closed() && open_stream(waiting_.front())) waiting_.pop_front();
    if (ready_hook_ && waiting_.empty()) ready_hook_();
  }
  // Report finished operations outside ngtcp2's callbacks (the engine may start the next one).
  while (!done_.empty()) {
    std::vector<std::pair<ClientCall*, OpResult>> done;
    done.swap(done_);
    for (auto& [call, r] : done) {
      if (OpSink* sink = call->sink()) {
        sink->op_done(std::move(r));
      } else if (SaturationSink* sat = call->sat()) {
        sat->stream_done(std::move(r));
      }
    }
  }
  for (ClientCall* call : closed_calls_) {
    unqueue(call);
    live_.erase(std::remove(live_.begin(), live_.end(), call), live_.end());
    delete call;
  }
  closed_calls_.clear();
  // Acknowledgements free send window: give send-saturation streams a chance to go on.
  if (args_.load == Load::kSendSaturation) {
    for (ClientCall* call : live_) {
      if (!call->fin && call->id >= 0) queue(call);
    }
  }
}

void QuicClient::on_closed(const std::string& why) {
  if (!handshake_done.load()) {
    failure = why;
    failure_tls = tls_failed(last_error());
    failed.store(true);
    wakeup_.notify();
  }
  for (ClientCall* call : live_) {
    call->finish(OpResult::failure(code::kConnect, "the connection closed: " + why));
  }
  for (ClientCall* call : waiting_) {
    call->finish(OpResult::failure(code::kConnect, "the connection closed: " + why));
  }
  waiting_.clear();
}

void QuicClient::close() {
  std::promise<void> closed_promise;
  auto done = closed_promise.get_future();
  loop_.post([this, &closed_promise] {
    close_with(0, "done");
    loop_.stop();
    closed_promise.set_value();
  });
  done.wait_for(std::chrono::seconds(1));
}

}  // namespace

std::unique_ptr<ClosableStack> connect_quic(const ClientArgs& args, Wakeup& wakeup,
                                            const std::function<bool()>& stop) {
  TlsConfig tls;
  try {
    tls = tls_client_config(read_file("--ca", args.ca));
  } catch (const std::runtime_error& e) {
    throw Failure(phase::kStartup, code::kConfig, "--ca " + args.ca + ": " + e.what());
  }
  SockAddr remote, local;
  try {
    remote = resolve(args.server, SOCK_DGRAM);
    local = local_address_for(remote);
  } catch (const std::exception& e) {
    throw Failure(phase::kConnect, code::kConnect, e.what());
  }
  int fd = socket(remote.family(), SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) throw Failure(phase::kConnect, code::kConnect, std::string("socket: ") + std::strerror(errno));
  set_udp_buffers(fd, kUdpBuffer);
  enable_gro(fd);
  socklen_t len = local.len;
  if (bind(fd, local.sa(), local.len) != 0 || connect(fd, remote.sa(), remote.len) != 0 ||
      getsockname(fd, local.sa(), &len) != 0) {
    throw Failure(phase::kConnect, code::kConnect,
                  "cannot bind a UDP socket to " + local.to_string() + ": " + std::strerror(errno));
  }
  local.len = len;

  static Loop* loop = new Loop();  // lives as long as the process: late callbacks may use it
  auto client = std::make_unique<QuicClient>(args, *loop, fd, local, remote, wakeup);
  QuicClient* c = client.get();
  std::promise<std::string> opened;
  auto opened_future = opened.get_future();
  loop->post([c, &tls, &opened] {
    try {
      c->open(tls);
      opened.set_value("");
    } catch (const std::exception& e) {
      opened.set_value(e.what());
    }
  });
  // The loop thread lives as long as the process (the client object is never destroyed while it
  // runs); close() stops it.
  std::thread([c] { c->loop_run(); }).detach();
  std::string open_error = opened_future.get();
  if (!open_error.empty()) throw Failure(phase::kConnect, code::kInternal, open_error);

  int64_t bound = now_ns() + 30 * int64_t{1000000000};
  wakeup.wait_until(bound, [&] { return c->handshake_done.load() || c->failed.load() || stop(); });
  if (c->handshake_done.load()) return client;
  client.release();  // its loop thread still runs; the process is about to exit
  if (c->failed.load()) {
    bool tls_failure = c->failure_tls;
    throw Failure(phase::kConnect, tls_failure ? code::kTls : code::kConnect,
                  std::string(tls_failure ? "TLS handshake with " : "connecting to ") + args.server.text +
                      " failed: " + c->failure);
  }
  if (stop()) return nullptr;
  throw Failure(phase::kConnect, code::kTimeout, "connecting to " + args.server.text + " took longer than 30 s");
}

}  // namespace rpcarena
