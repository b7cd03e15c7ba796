// The quic stack's server: one event loop per CPU, each with its own UDP socket on --listen
// (SO_REUSEPORT: the kernel keeps every packet of a connection on one socket, so one loop owns a
// connection for its whole life). Each client-opened bidirectional stream carries one call in the
// native framing; every request is checked, and a call that fails a check gets STATUS 3.
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <future>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include <ngtcp2/ngtcp2_crypto_gnutls.h>

#include "clock.h"
#include "framing.h"
#include "quic_common.h"
#include "stacks.h"
#include "workload.h"

namespace rpcarena {

namespace {

constexpr size_t kScidLen = 18;
constexpr size_t kFillBelow = 65536;

class ServerLoop;
class ServerConn;

// One call on one stream, as docs/stacks.md "Native framing" and "Server errors" describe.
class ServerCall final : public SendStream {
 public:
  ServerCall(ServerConn* conn, int64_t stream_id, ServerCounters& counters)
      : conn_(conn), counters_(counters) {
    id = stream_id;
  }
  void on_data(const uint8_t* data, size_t len, bool fin);
  void fill() override;

 private:
  enum class State { kHeader, kBody, kSkipToEnd, kAnswering, kDone };
  void handle(const Frame& f);
  void on_request(const Frame& f);
  void on_end();
  // A well-framed but unacceptable call: STATUS `code` once the client's END has been read.
  void reject(uint32_t code, const std::string& message, bool end_seen);
  // Broken framing: STATUS 3 where possible, then the stream is closed.
  void broken(const std::string& message);
  void push(std::string&& bytes);
  void send_status(uint32_t code, const std::string& message);

  ServerConn* conn_;
  ServerCounters& counters_;
  FrameReader reader_;
  State state_ = State::kHeader;
  Shape shape_ = Shape::kUnary;
  bool have_request_ = false;
  pb::Request request_;
  pb::Request first_;  // unary and server stream: the one request
  StreamCheck check_;
  pb::Response response_;
  uint32_t pending_code_ = 0;
  std::string pending_message_;
  uint64_t produced_ = 0;  // server stream: responses appended
};

class ServerConn final : public QuicConnection {
 public:
  ServerConn(ServerLoop& owner, Loop& loop, int fd, const SockAddr& local, const SockAddr& remote,
             ServerCounters& counters)
      : QuicConnection(loop, fd, local, remote), owner_(owner), counters_(counters) {}
  ~ServerConn() override {
    for (auto& [id, call] : calls_) {
      unqueue(call);
      delete call;
    }
  }
  // Creates the ngtcp2 server connection for the Initial packet `hd`.
  void accept(const ngtcp2_pkt_hd& hd, const TlsConfig& tls);
  const ngtcp2_cid& scid() const { return scid_; }
  void shutdown_read(int64_t stream_id) { ngtcp2_conn_shutdown_stream_read(conn_, stream_id, 0); }
  Loop::Handler timer_handler;

 protected:
  void on_stream_data(int64_t, void* user, const uint8_t* data, size_t len, bool fin) override {
    if (user) static_cast<ServerCall*>(user)->on_data(data, len, fin);
  }
  void on_stream_close(int64_t id, void* user, uint64_t) override {
    if (user) {
      auto* call = static_cast<ServerCall*>(user);
      unqueue(call);
      calls_.erase(id);
      delete call;
    }
    ngtcp2_conn_extend_max_streams_bidi(conn_, 1);  // give the client its stream credit back
  }
  void on_stream_reset(int64_t, void*) override {}
  void on_closed(const std::string& why) override;

 public:
  static int on_stream_open(ngtcp2_conn* conn, int64_t id, void* user) {
    auto* self = static_cast<ServerConn*>(static_cast<QuicConnection*>(user));
    if (!ngtcp2_is_bidi_stream(id)) return 0;
    auto* call = new ServerCall(self, id, self->counters_);
    self->calls_[id] = call;
    ngtcp2_conn_set_stream_user_data(conn, id, static_cast<SendStream*>(call));
    return 0;
  }
  static int on_new_cid(ngtcp2_conn*, ngtcp2_cid* cid, uint8_t* token, size_t len, void* user);
  static int on_remove_cid(ngtcp2_conn*, const ngtcp2_cid* cid, void* user);

 private:
  ServerLoop& owner_;
  ServerCounters& counters_;
  ngtcp2_cid scid_{};
  std::unordered_map<int64_t, ServerCall*> calls_;
};

std::string cid_key(const uint8_t* data, size_t len) {
  return std::string(reinterpret_cast<const char*>(data), len);
}

// One loop thread with its socket and the connections it owns.
class ServerLoop {
 public:
  ServerLoop(int fd, const SockAddr& local, const TlsConfig& tls, ServerCounters& counters)
      : fd_(fd), local_(local), tls_(tls), counters_(counters) {
    read_handler_ = [this](uint32_t) { on_readable(); };
    loop_.add(fd_, EPOLLIN, &read_handler_);
  }
  ~ServerLoop() {
    if (thread_.joinable()) thread_.detach();
  }
  void start() {
    thread_ = std::thread([this] { loop_.run([this] { after_events(); }); });
  }
  // Closes every connection ("shutdown") and stops the loop; waits up to a second.
  void stop() {
    std::promise<void> p;
    auto f = p.get_future();
    loop_.post([this, &p] {
      for (auto& c : conns_) c->close_with(0, "shutdown");
      loop_.stop();
      p.set_value();
    });
    f.wait_for(std::chrono::seconds(1));
    if (thread_.joinable()) thread_.join();
  }
  void add_cid(const ngtcp2_cid* cid, ServerConn* c) { cids_[cid_key(cid->data, cid->datalen)] = c; }
  void remove_cid(const ngtcp2_cid* cid) { cids_.erase(cid_key(cid->data, cid->datalen)); }

 private:
  void on_readable();
  void on_datagram(uint8_t* data, size_t len, const SockAddr& from);
  void after_events();
  void send_version_negotiation(const ngtcp2_version_cid& vc, const SockAddr& to);

  Loop loop_;
  int fd_;
  SockAddr local_;
  const TlsConfig& tls_;
  ServerCounters& counters_;
  Loop::Handler read_handler_;
  std::thread thread_;
  std::unordered_map<std::string, ServerConn*> cids_;
  std::vector<std::unique_ptr<ServerConn>> conns_;
};

// --- ServerCall -----------------------------------------------------------------------------------

void ServerCall::push(std::string&& bytes) { conn_->append_to(this, std::move(bytes)); }

void ServerCall::send_status(uint32_t code, const std::string& message) {
  pb::Status st;
  st.set_code(code);
  st.set_message(message);
  std::string out;
  append_message(out, FrameType::kStatus, st);
  push(std::move(out));
  fin = true;
  state_ = State::kDone;
  conn_->queue(this);
}

void ServerCall::reject(uint32_t code, const std::string& message, bool end_seen) {
  counters_.rejected(message);
  if (end_seen) {
    send_status(code, message);
  } else {
    pending_code_ = code;
    pending_message_ = message;
    state_ = State::kSkipToEnd;
  }
}

void ServerCall::broken(const std::string& message) {
  counters_.rejected(message);
  send_status(3, message);
  conn_->shutdown_read(id);
}

void ServerCall::on_data(const uint8_t* data, size_t len, bool fin_in) {
  if (state_ == State::kDone || state_ == State::kAnswering) {
    if (len > 0 && state_ == State::kAnswering) {
      // Data after END: the client broke the framing; answer what is being answered and stop.
    }
    return;
  }
  reader_.feed(data, len);
  Frame f;
  std::string error;
  while (state_ != State::kDone && state_ != State::kAnswering) {
    FrameReader::Result r = reader_.next(&f, &error);
    if (r == FrameReader::Result::kNeedMore) break;
    if (r == FrameReader::Result::kError) {
      broken(error);
      return;
    }
    handle(f);
  }
  if (fin_in && state_ == State::kHeader && reader_.pending() == 0) {
    // A stream that ends before its first byte carries no call (the Rust backpressure client
    // finishes a stream it opened after the deadline): nothing to reject; end ours as well.
    fin = true;
    state_ = State::kDone;
    conn_->queue(this);
    return;
  }
  if (fin_in && state_ != State::kDone && state_ != State::kAnswering) {
    broken(reader_.pending() > 0 ? "the stream ended inside a frame"
                                 : "the stream ended without END");
  }
}

void ServerCall::handle(const Frame& f) {
  switch (state_) {
    case State::kHeader:
      if (f.type != FrameType::kHeader) {
        broken(std::string("a call must start with a HEADER frame, not ") + frame_name(f.type));
        return;
      }
      counters_.rpc();
      if (!shape_of_path(reinterpret_cast<const char*>(f.body), f.len, &shape_)) {
        reject(12, "unknown method \"" + std::string(reinterpret_cast<const char*>(f.body), f.len) + "\"", false);
        return;
      }
      state_ = State::kBody;
      return;
    case State::kBody:
      if (f.type == FrameType::kMessage) {
        on_request(f);
      } else if (f.type == FrameType::kEnd) {
        on_end();
      } else {
        broken(std::string("unexpected ") + frame_name(f.type) + " frame in a " + name(shape_) + " call");
      }
      return;
    case State::kSkipToEnd:
      if (f.type == FrameType::kEnd) {
        send_status(pending_code_, pending_message_);
      } else if (f.type != FrameType::kMessage) {
        broken(std::string("unexpected ") + frame_name(f.type) + " frame in a " + name(shape_) + " call");
      }
      return;
    default:
      return;
  }
}

void ServerCall::on_request(const Frame& f) {
  counters_.request();
  if (!request_.ParseFromArray(f.body, static_cast<int>(f.len))) {
    reject(3, "the request is not a valid rpcarena.bench.v1.Request", false);
    return;
  }
  if (shape_ == Shape::kUnary || shape_ == Shape::kServerStream) {
    if (have_request_) {
      reject(3, std::string("a ") + name(shape_) + " call carries exactly one request, got more", false);
      return;
    }
    have_request_ = true;
    first_.Swap(&request_);
    return;
  }
  std::string error = check_.next(request_, shape_);
  if (!error.empty()) {
    reject(3, error, false);
    return;
  }
  if (shape_ == Shape::kBidi) {
    // Answer each request as it arrives.
    build_response(&response_, kind_of(request_), request_.seq(), request_.response_size());
    std::string out;
    append_message(out, FrameType::kMessage, response_);
    push(std::move(out));
    counters_.response();
    conn_->queue(this);
  }
}

void ServerCall::on_end() {
  switch (shape_) {
    case Shape::kSend:  // no native method carries it (shape_of_path never gives it)
    case Shape::kUnary:
    case Shape::kServerStream: {
      if (!have_request_) {
        reject(3, std::string("a ") + name(shape_) + " call carries one request, got none", true);
        return;
      }
      std::string error = check_request(first_, shape_);
      if (!error.empty()) {
        reject(3, error, true);
        return;
      }
      if (shape_ == Shape::kUnary) {
        build_response(&response_, kind_of(first_), first_.seq(), first_.response_size());
        std::string out;
        append_message(out, FrameType::kMessage, response_);
        push(std::move(out));
        counters_.response();
        send_status(0, "");
      } else {
        state_ = State::kAnswering;  // fill() produces the N responses, then STATUS
        conn_->queue(this);
      }
      return;
    }
    case Shape::kClientStream: {
      if (check_.count() == 0) {
        reject(3, "a client stream carries at least one request", true);
        return;
      }
      pb::Summary summary;
      build_summary(&summary, check_);
      std::string out;
      append_message(out, FrameType::kMessage, summary);
      push(std::move(out));
      counters_.response();
      send_status(0, "");
      return;
    }
    case Shape::kBidi:
      if (check_.count() == 0) {
        reject(3, "a bidi call carries at least one request", true);
        return;
      }
      send_status(0, "");
      return;
  }
}

void ServerCall::fill() {
  if (state_ != State::kAnswering) return;
  uint64_t total = first_.response_messages();
  PayloadKind kind = kind_of(first_);
  std::string out;
  while (produced_ < total && unwritten() + out.size() < kFillBelow) {
    build_response(&response_, kind, produced_, first_.response_size());
    append_message(out, FrameType::kMessage, response_);
    counters_.response();
    ++produced_;
  }
  push(std::move(out));
  if (produced_ == total) send_status(0, "");
}

// --- ServerConn -----------------------------------------------------------------------------------

int ServerConn::on_new_cid(ngtcp2_conn*, ngtcp2_cid* cid, uint8_t* token, size_t len, void* user) {
  auto* self = static_cast<ServerConn*>(static_cast<QuicConnection*>(user));
  random_bytes(cid->data, len);
  cid->datalen = len;
  random_bytes(token, NGTCP2_STATELESS_RESET_TOKENLEN);
  self->owner_.add_cid(cid, self);
  return 0;
}

int ServerConn::on_remove_cid(ngtcp2_conn*, const ngtcp2_cid* cid, void* user) {
  static_cast<ServerConn*>(static_cast<QuicConnection*>(user))->owner_.remove_cid(cid);
  return 0;
}

void ServerConn::accept(const ngtcp2_pkt_hd& hd, const TlsConfig& tls) {
  scid_.datalen = kScidLen;
  random_bytes(scid_.data, scid_.datalen);
  ngtcp2_path path{{const_cast<sockaddr*>(local_.sa()), local_.len},
                   {const_cast<sockaddr*>(remote_.sa()), remote_.len},
                   nullptr};
  ngtcp2_callbacks cb = base_callbacks();
  cb.recv_client_initial = ngtcp2_crypto_recv_client_initial_cb;
  cb.stream_open = on_stream_open;
  cb.get_new_connection_id = on_new_cid;
  cb.remove_connection_id = on_remove_cid;
  ngtcp2_settings settings = base_settings();
  ngtcp2_transport_params params = base_params();
  params.initial_max_streams_bidi = kQuicMaxStreams;
  params.original_dcid = hd.dcid;
  params.stateless_reset_token_present = 1;
  random_bytes(params.stateless_reset_token, sizeof params.stateless_reset_token);
  ngtcp2_conn* conn = nullptr;
  int rv = ngtcp2_conn_server_new(&conn, &hd.scid, &scid_, &path, hd.version, &cb, &settings, &params,
                                  nullptr, static_cast<QuicConnection*>(this));
  if (rv != 0) throw std::runtime_error(std::string("ngtcp2_conn_server_new: ") + ngtcp2_strerror(rv));

  gnutls_session_t session = nullptr;
  // No session tickets are sent (tickets are only sent when enabled) and no early data.
  gnutls_init(&session, GNUTLS_SERVER | GNUTLS_NO_END_OF_EARLY_DATA);
  if (ngtcp2_crypto_gnutls_configure_server_session(session) != 0) {
    throw std::runtime_error("ngtcp2_crypto_gnutls_configure_server_session failed");
  }
  if (int e = gnutls_priority_set_direct(session, kPriority, nullptr); e != 0) {
    throw std::runtime_error(std::string("gnutls_priority_set_direct: ") + gnutls_strerror(e));
  }
  gnutls_credentials_set(session, GNUTLS_CRD_CERTIFICATE, tls.cred);
  gnutls_datum_t alpn{reinterpret_cast<unsigned char*>(const_cast<char*>(kAlpn)),
                      static_cast<unsigned>(std::strlen(kAlpn))};
  gnutls_alpn_set_protocols(session, &alpn, 1, GNUTLS_ALPN_MANDATORY | GNUTLS_ALPN_SERVER_PRECEDENCE);
  attach(conn, session);
}

void ServerConn::on_closed(const std::string&) {}

// --- ServerLoop -----------------------------------------------------------------------------------

void ServerLoop::on_readable() {
  static thread_local uint8_t buf[65536];
  for (int i = 0; i < 64; ++i) {
    SockAddr from;
    size_t segment = 0;
    ssize_t n = receive_batch(fd_, buf, sizeof buf, &from, &segment);
    if (n < 0) return;
    for (size_t off = 0; off < static_cast<size_t>(n); off += segment) {
      on_datagram(buf + off, std::min(segment, static_cast<size_t>(n) - off), from);
    }
  }
}

void ServerLoop::on_datagram(uint8_t* data, size_t n, const SockAddr& from) {
  if (n == 0) return;
  ngtcp2_version_cid vc;
  int rv = ngtcp2_pkt_decode_version_cid(&vc, data, n, kScidLen);
  if (rv == NGTCP2_ERR_VERSION_NEGOTIATION) {
    send_version_negotiation(vc, from);
    return;
  }
  if (rv != 0) return;
  auto it = cids_.find(cid_key(vc.dcid, vc.dcidlen));
  if (it != cids_.end()) {
    it->second->on_packet(data, n, from);
    return;
  }
  ngtcp2_pkt_hd hd;
  if (ngtcp2_accept(&hd, data, n) != 0) return;
  auto conn = std::make_unique<ServerConn>(*this, loop_, fd_, local_, from, counters_);
  try {
    conn->accept(hd, tls_);
  } catch (const std::exception& e) {
    diag(std::string("cannot accept a QUIC connection: ") + e.what());
    return;
  }
  ServerConn* c = conn.get();
  add_cid(&hd.dcid, c);
  add_cid(&c->scid(), c);
  c->timer_handler = [c](uint32_t) { c->on_timer(); };
  loop_.add(c->timer().fd(), EPOLLIN, &c->timer_handler);
  conns_.push_back(std::move(conn));
  c->on_packet(data, n, from);
}

void ServerLoop::after_events() {
  for (auto& c : conns_) c->write();
  // Forget connections that are over.
  for (size_t i = 0; i < conns_.size();) {
    if (!conns_[i]->closed()) {
      ++i;
      continue;
    }
    ServerConn* c = conns_[i].get();
    for (auto it = cids_.begin(); it != cids_.end();) {
      it = it->second == c ? cids_.erase(it) : std::next(it);
    }
    loop_.remove(c->timer().fd());
    conns_.erase(conns_.begin() + static_cast<long>(i));
  }
}

void ServerLoop::send_version_negotiation(const ngtcp2_version_cid& vc, const SockAddr& to) {
  uint8_t buf[1500];
  uint8_t unused = 0;
  random_bytes(&unused, 1);
  uint32_t versions[] = {NGTCP2_PROTO_VER_V1};
  ngtcp2_ssize n = ngtcp2_pkt_write_version_negotiation(buf, sizeof buf, unused, vc.scid, vc.scidlen,
                                                        vc.dcid, vc.dcidlen, versions, 1);
  if (n > 0) sendto(fd_, buf, static_cast<size_t>(n), 0, to.sa(), to.len);
}

class QuicServer final : public ServerStack {
 public:
  explicit QuicServer(const ServerArgs& args) {
    std::string cert = read_file("--cert", args.cert);
    std::string key = read_file("--key", args.key);
    try {
      check_certificates_pem(cert);
      tls_ = tls_server_config(cert, key);
    } catch (const std::exception& e) {
      throw Failure(phase::kStartup, code::kConfig,
                    "--cert " + args.cert + " / --key " + args.key + ": " + e.what());
    }
    SockAddr addr;
    try {
      addr = resolve(args.listen, SOCK_DGRAM);
    } catch (const std::exception& e) {
      throw Failure(phase::kListen, code::kConfig, std::string("--listen: ") + e.what());
    }
    unsigned loops = std::max(1u, std::thread::hardware_concurrency());
    for (unsigned i = 0; i < loops; ++i) {
      int fd = socket(addr.family(), SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
      int one = 1;
      setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
      if (fd < 0 || bind(fd, addr.sa(), addr.len) != 0) {
        throw Failure(phase::kListen, code::kConfig,
                      "cannot bind UDP " + args.listen.text + ": " + std::strerror(errno));
      }
      if (i == 0) {
        addr.len = sizeof addr.storage;
        getsockname(fd, addr.sa(), &addr.len);  // port 0 resolved; the other sockets share it
      }
      set_udp_buffers(fd, kUdpBuffer);
      enable_gro(fd);
      loops_.push_back(std::make_unique<ServerLoop>(fd, addr, tls_, counters_));
    }
    address_ = addr.to_string();
    for (auto& l : loops_) l->start();
  }
  std::string address() const override { return address_; }
  void stop() override {
    for (auto& l : loops_) l->stop();
  }
  Json counters() const override { return counters_.to_json(); }
  std::string first_rejection() const override { return counters_.first_rejection(); }

 private:
  TlsConfig tls_;
  ServerCounters counters_;
  std::vector<std::unique_ptr<ServerLoop>> loops_;
  std::string address_;
};

}  // namespace

std::unique_ptr<ServerStack> serve_quic(const ServerArgs& args) {
  return std::make_unique<QuicServer>(args);
}

}  // namespace rpcarena
