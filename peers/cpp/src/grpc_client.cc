// The grpc stack's client: one gRPC channel (one HTTP/2 connection) shared by every lane; each
// operation is one call on the callback API (ClientReadReactor, ClientBidiReactor; unary and
// client-stream calls as OneResponseCall below), validated as docs/peer-protocol.md asks.
#include <arpa/inet.h>
#include <sys/socket.h>
#include <unistd.h>

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/security/credentials.h>
#include <grpcpp/security/tls_certificate_provider.h>
#include <grpcpp/security/tls_credentials_options.h>

#include "clock.h"
#include "grpc_tuning.h"
#include "net.h"
#include "rpcarena/bench/v1/bench.grpc.pb.h"
#include "stacks.h"
#include "workload.h"

namespace rpcarena {

namespace {

using grpc::StatusCode;

const char* status_name(StatusCode c) {
  switch (c) {
    case StatusCode::OK: return "OK";
    case StatusCode::CANCELLED: return "CANCELLED";
    case StatusCode::UNKNOWN: return "UNKNOWN";
    case StatusCode::INVALID_ARGUMENT: return "INVALID_ARGUMENT";
    case StatusCode::DEADLINE_EXCEEDED: return "DEADLINE_EXCEEDED";
    case StatusCode::NOT_FOUND: return "NOT_FOUND";
    case StatusCode::ALREADY_EXISTS: return "ALREADY_EXISTS";
    case StatusCode::PERMISSION_DENIED: return "PERMISSION_DENIED";
    case StatusCode::RESOURCE_EXHAUSTED: return "RESOURCE_EXHAUSTED";
    case StatusCode::FAILED_PRECONDITION: return "FAILED_PRECONDITION";
    case StatusCode::ABORTED: return "ABORTED";
    case StatusCode::OUT_OF_RANGE: return "OUT_OF_RANGE";
    case StatusCode::UNIMPLEMENTED: return "UNIMPLEMENTED";
    case StatusCode::INTERNAL: return "INTERNAL";
    case StatusCode::UNAVAILABLE: return "UNAVAILABLE";
    case StatusCode::DATA_LOSS: return "DATA_LOSS";
    case StatusCode::UNAUTHENTICATED: return "UNAUTHENTICATED";
    default: return "?";
  }
}

bool mentions_tls(const std::string& m) {
  for (const char* word : {"andshake", "SSL", "ssl", "TLS", "ertificate", "ALPN", "alpn"}) {
    if (m.find(word) != std::string::npos) return true;
  }
  return false;
}

// docs/peer-protocol.md "Error codes": gRPC C++ gives a status code and text only, so UNAVAILABLE
// (which the server never sends here) is the library's: a TLS failure when its text names the
// handshake, a connection failure otherwise; DEADLINE_EXCEEDED is a timeout; every other status
// was sent by the server (rpc).
OpResult status_failure(const grpc::Status& s) {
  std::string text = std::string("status ") + status_name(s.error_code()) + ": " + s.error_message();
  switch (s.error_code()) {
    case StatusCode::DEADLINE_EXCEEDED:
      return OpResult::failure(code::kTimeout, text);
    case StatusCode::UNAVAILABLE:
      return OpResult::failure(mentions_tls(s.error_message()) ? code::kTls : code::kConnect, text);
    default:
      return OpResult::failure(code::kRpc, text);
  }
}

struct Workload {
  PayloadKind kind;
  uint32_t request_size;
  uint32_t response_size;
  uint32_t messages;
};

OpResult ok_result(uint64_t requests, uint64_t responses, uint64_t request_bytes,
                   uint64_t response_bytes) {
  OpResult r;
  r.ok = true;
  r.requests = requests;
  r.responses = responses;
  r.request_bytes = request_bytes;
  r.response_bytes = response_bytes;
  return r;
}

// Writes request `*index` of a stream of w.messages; the last one half-closes the stream with it.
template <typename Reactor>
void write_request(Reactor* reactor, pb::Request* request, const Workload& w, uint64_t* index) {
  build_request(request, w.kind, *index, w.request_size, w.response_size, 0);
  ++*index;
  if (*index == w.messages) {
    reactor->StartWriteLast(request, grpc::WriteOptions());
  } else {
    reactor->StartWrite(request);
  }
}

// A call that answers with one message: unary (one response) and client stream (one summary).
// gRPC C++'s own unary call and ClientWriteReactor read exactly one message and then wait for the
// status; when the server sends a second message first, gRPC core (1.51) keeps it unread and never
// delivers the trailers behind it, so the call never ends (the conformance kit's server fault
// `extra-message`). So these calls read until the end of the stream, which puts the same frames
// on the wire: a second message fails the call as invalid, as the Go and C peers do. A unary call
// is a ClientReadReactor on the unary path (gRPC's internal reader factory, which a generated
// server-stream call uses; build.sh pins gRPC 1.51.1): one batch sends headers, request and
// half-close, and it costs about 1.1x the library's unary call in client CPU, where a generic bidi
// stream cost 1.4x (peers/cpp/README.md, "Measured"). A client stream is a generic-stub bidi
// stream, its initial metadata corked into the first write.
template <typename Reactor, typename Response>
class OneResponseCall : public Reactor {
 public:
  void OnReadDone(bool ok) override {
    if (!ok) return;  // the end of the stream (or a failed call): OnDone says which
    std::string error = check_one_more(got_, 1, what_);
    if (error.empty()) error = check(response_);
    if (!error.empty()) {
      error_ = std::move(error);
      ctx_.TryCancel();
      return;
    }
    ++got_;
    this->StartRead(&response_);
  }
  void OnDone(const grpc::Status& s) override {
    OpResult r;
    if (!error_.empty()) {
      r = OpResult::failure(code::kInvalid, error_);
    } else if (!s.ok()) {
      r = status_failure(s);
    } else {
      std::string error = check_count_at_end(got_, 1, what_);
      r = error.empty() ? success() : OpResult::failure(code::kInvalid, error);
    }
    finish(std::move(r));
  }

 protected:
  explicit OneResponseCall(const char* what) : what_(what) {}
  // The derived constructor's last step, once it has queued its first write.
  void start() {
    this->StartRead(&response_);
    this->StartCall();
  }
  // The one response's own checks: "" or why it is invalid.
  virtual std::string check(const Response& r) = 0;
  virtual OpResult success() = 0;
  // Hands the result on and deletes the call.
  virtual void finish(OpResult r) = 0;
  grpc::ClientContext ctx_;

 private:
  const char* what_;
  Response response_;
  uint64_t got_ = 0;
  std::string error_;  // written only by reads, which gRPC runs one at a time
};

using SummaryStub = grpc::TemplatedGenericStub<pb::Request, pb::Summary>;

// The stubs and full method paths ("/package.Service/Method") the OneResponseCalls use; they
// outlive every call (gRPC keeps a pointer to the path).
struct OneResponseStubs {
  explicit OneResponseStubs(const std::shared_ptr<grpc::Channel>& channel)
      : channel(channel),
        summary(channel),
        unary_method(std::string("/") + pb::BenchService::service_full_name() + "/Unary"),
        client_stream_method(std::string("/") + pb::BenchService::service_full_name() +
                             "/ClientStream"),
        command_method(std::string("/") + pb::BenchService::service_full_name() + "/Command") {}
  std::shared_ptr<grpc::Channel> channel;
  SummaryStub summary;
  std::string unary_method;
  std::string client_stream_method;
  std::string command_method;
};

class UnaryCall final : public OneResponseCall<grpc::ClientReadReactor<pb::Response>, pb::Response> {
 public:
  UnaryCall(OneResponseStubs* stubs, const Workload& w, uint64_t seq, OpSink* sink)
      : OneResponseCall("response"), w_(w), seq_(seq), sink_(sink) {
    build_request(&request_, w.kind, seq, w.request_size, w.response_size, 0);
    grpc::internal::ClientCallbackReaderFactory<pb::Response>::Create(
        stubs->channel.get(),
        grpc::internal::RpcMethod(stubs->unary_method.c_str(), grpc::internal::RpcMethod::SERVER_STREAMING),
        &ctx_, &request_, this);
    start();
  }

 private:
  std::string check(const pb::Response& r) override {
    return check_response(r, w_.kind, seq_, w_.response_size);
  }
  OpResult success() override { return ok_result(1, 1, w_.request_size, w_.response_size); }
  void finish(OpResult r) override {
    OpSink* sink = sink_;
    delete this;
    sink->op_done(std::move(r));
  }
  Workload w_;
  uint64_t seq_;
  OpSink* sink_;
  pb::Request request_;
};

// 1.3, shape send: one Command call, its Empty acknowledgement read to the end of the stream as a
// unary response is (a second message fails it as invalid).
class CommandCall final : public OneResponseCall<grpc::ClientReadReactor<pb::Empty>, pb::Empty> {
 public:
  CommandCall(OneResponseStubs* stubs, const Workload& w, uint64_t seq, OpSink* sink)
      : OneResponseCall("acknowledgement"), w_(w), sink_(sink) {
    build_request(&request_, w.kind, seq, w.request_size, 0, 0);
    grpc::internal::ClientCallbackReaderFactory<pb::Empty>::Create(
        stubs->channel.get(),
        grpc::internal::RpcMethod(stubs->command_method.c_str(), grpc::internal::RpcMethod::SERVER_STREAMING),
        &ctx_, &request_, this);
    start();
  }

 private:
  std::string check(const pb::Empty&) override { return ""; }
  // requests = completed, responses = the acknowledgements read, no response bytes.
  OpResult success() override { return ok_result(1, 1, w_.request_size, 0); }
  void finish(OpResult r) override {
    OpSink* sink = sink_;
    delete this;
    sink->op_done(std::move(r));
  }
  Workload w_;
  OpSink* sink_;
  pb::Request request_;
};

class ClientStreamCall final : public OneResponseCall<grpc::ClientBidiReactor<pb::Request, pb::Summary>, pb::Summary> {
 public:
  ClientStreamCall(OneResponseStubs* stubs, const Workload& w, OpSink* sink)
      : OneResponseCall("summary"), w_(w), sink_(sink) {
    ctx_.set_initial_metadata_corked(true);
    stubs->summary.PrepareBidiStreamingCall(&ctx_, stubs->client_stream_method, grpc::StubOptions(), this);
    write_next();
    start();
  }
  void OnWriteDone(bool ok) override {
    if (ok && index_ < w_.messages) write_next();
  }

 private:
  void write_next() { write_request(this, &request_, w_, &index_); }
  std::string check(const pb::Summary& s) override {
    return check_summary(s, w_.kind, w_.messages, w_.request_size, w_.response_size);
  }
  OpResult success() override {
    return ok_result(w_.messages, 1, uint64_t{w_.messages} * w_.request_size, w_.response_size);
  }
  void finish(OpResult r) override {
    OpSink* sink = sink_;
    delete this;
    sink->op_done(std::move(r));
  }
  Workload w_;
  OpSink* sink_;
  pb::Request request_;
  uint64_t index_ = 0;
};

// Reads N responses (server stream or bidi), checking each as it arrives.
template <typename Base>
class ReadingCall : public Base {
 protected:
  ReadingCall(const Workload& w, OpSink* sink, uint64_t requests, uint64_t request_bytes)
      : w_(w), sink_(sink), requests_(requests), request_bytes_(request_bytes) {}

  void on_read(bool ok) {
    if (!ok) return;
    std::string error;
    error = check_one_more(got_, w_.messages, "response");
    if (error.empty()) error = check_response(response_, w_.kind, got_, w_.response_size);
    if (!error.empty()) {
      error_ = error;
      ctx_.TryCancel();
      return;
    }
    bytes_ += payload_len(response_.payload(), response_.has_body() ? &response_.body() : nullptr);
    ++got_;
    this->StartRead(&response_);
  }

  void on_done(const grpc::Status& s) {
    OpResult r;
    if (!error_.empty()) {
      r = OpResult::failure(code::kInvalid, error_);
    } else if (!s.ok()) {
      r = status_failure(s);
    } else if (std::string error = check_count_at_end(got_, w_.messages, "response"); !error.empty()) {
      r = OpResult::failure(code::kInvalid, error);
    } else {
      r = ok_result(requests_, w_.messages, request_bytes_, bytes_);
    }
    OpSink* sink = sink_;
    delete this;
    sink->op_done(std::move(r));
  }

  Workload w_;
  OpSink* sink_;
  uint64_t requests_;
  uint64_t request_bytes_;
  grpc::ClientContext ctx_;
  pb::Response response_;
  uint64_t got_ = 0;
  uint64_t bytes_ = 0;
  std::string error_;  // written only by reads, which gRPC runs one at a time
};

class ServerStreamCall final : public ReadingCall<grpc::ClientReadReactor<pb::Response>> {
 public:
  ServerStreamCall(pb::BenchService::Stub* stub, const Workload& w, uint64_t seq, OpSink* sink)
      : ReadingCall(w, sink, 1, w.request_size) {
    build_request(&request_, w.kind, seq, w.request_size, w.response_size, w.messages);
    stub->async()->ServerStream(&ctx_, &request_, this);
    StartRead(&response_);
    StartCall();
  }
  void OnReadDone(bool ok) override { on_read(ok); }
  void OnDone(const grpc::Status& s) override { on_done(s); }

 private:
  pb::Request request_;
};

class BidiCall final : public ReadingCall<grpc::ClientBidiReactor<pb::Request, pb::Response>> {
 public:
  BidiCall(pb::BenchService::Stub* stub, const Workload& w, OpSink* sink)
      : ReadingCall(w, sink, w.messages, uint64_t{w.messages} * w.request_size) {
    stub->async()->Bidi(&ctx_, this);
    StartRead(&response_);
    write_next();
    StartCall();
  }
  void OnWriteDone(bool ok) override {
    if (ok && index_ < w_.messages) write_next();
  }
  void OnReadDone(bool ok) override { on_read(ok); }
  void OnDone(const grpc::Status& s) override { on_done(s); }

 private:
  void write_next() { write_request(this, &request_, w_, &index_); }
  pb::Request request_;
  uint64_t index_ = 0;
};

// send-saturation: messages while the engine allows, each "accepted" when gRPC calls
// OnWriteDone; then the half-close and the summary, which must confirm every message.
class SaturationCall final : public OneResponseCall<grpc::ClientBidiReactor<pb::Request, pb::Summary>, pb::Summary> {
 public:
  SaturationCall(OneResponseStubs* stubs, const Workload& w, SaturationSink* sink)
      : OneResponseCall("summary"), w_(w), sink_(sink) {
    ctx_.set_initial_metadata_corked(true);
    stubs->summary.PrepareBidiStreamingCall(&ctx_, stubs->client_stream_method, grpc::StubOptions(), this);
    next();
    start();
  }
  void OnWriteDone(bool ok) override {
    if (!ok) return;
    sink_->message_accepted();
    ++sent_;
    next();
  }
  void OnWritesDoneDone(bool) override {}

 private:
  // The summary comes after the half-close, when sent_ no longer changes.
  std::string check(const pb::Summary& s) override {
    return check_summary(s, w_.kind, sent_, w_.request_size, w_.response_size);
  }
  OpResult success() override { return ok_result(sent_, 1, sent_ * w_.request_size, w_.response_size); }
  void finish(OpResult r) override {
    SaturationSink* sink = sink_;
    delete this;
    sink->stream_done(std::move(r));
  }
  void next() {
    if (sink_->want_message()) {
      build_request(&request_, w_.kind, sent_, w_.request_size, w_.response_size, 0);
      StartWrite(&request_);
    } else {
      StartWritesDone();
    }
  }
  Workload w_;
  SaturationSink* sink_;
  pb::Request request_;
  uint64_t sent_ = 0;
};

class GrpcClient final : public ClosableStack {
 public:
  GrpcClient(const ClientArgs& args, std::shared_ptr<grpc::Channel> channel)
      : args_(args),
        w_{args.payload, args.request_size, args.response_size, args.messages},
        channel_(std::move(channel)),
        stub_(pb::BenchService::NewStub(channel_)),
        one_response_(channel_) {}

  void start(uint64_t seq, OpSink* sink) override {
    switch (args_.shape) {
      case Shape::kUnary: new UnaryCall(&one_response_, w_, seq, sink); break;
      case Shape::kClientStream: new ClientStreamCall(&one_response_, w_, sink); break;
      case Shape::kServerStream: new ServerStreamCall(stub_.get(), w_, seq, sink); break;
      case Shape::kBidi: new BidiCall(stub_.get(), w_, sink); break;
      case Shape::kSend: new CommandCall(&one_response_, w_, seq, sink); break;
    }
  }
  void start_saturation(SaturationSink* sink) override {
    new SaturationCall(&one_response_, w_, sink);
  }
  // The duplicates of the channel's sockets first, or they would keep the connection open.
  void close() override { tcp_sockets::clear(); }
  // TCP_INFO of the sockets the socket mutator registered (grpc_tuning.cc).
  std::string transport() const override { return "tcp"; }
  std::vector<ConnReading> read_transport() override { return tcp_sockets::read(); }

 private:
  const ClientArgs& args_;
  Workload w_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<pb::BenchService::Stub> stub_;
  OneResponseStubs one_response_;
};

// Whether a plain TCP connection to `addr` opens within a second (to tell a TLS failure from an
// unreachable server when gRPC only says the channel failed).
bool tcp_reachable(const SockAddr& addr) {
  int fd = socket(addr.family(), SOCK_STREAM | SOCK_NONBLOCK, 0);
  if (fd < 0) return false;
  connect(fd, addr.sa(), addr.len);
  fd_set w;
  FD_ZERO(&w);
  FD_SET(fd, &w);
  timeval tv{1, 0};
  bool ok = false;
  if (select(fd + 1, nullptr, &w, nullptr, &tv) == 1) {
    int err = 0;
    socklen_t len = sizeof err;
    getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
    ok = err == 0;
  }
  ::close(fd);
  return ok;
}

// Trusts only --ca and verifies the server's certificate (against --server-name, set as the
// channel's target name override).
std::shared_ptr<grpc::ChannelCredentials> tls_credentials(const ClientArgs& args) {
  std::string ca = read_file("--ca", args.ca);
  auto provider = std::make_shared<grpc::experimental::StaticDataCertificateProvider>(ca);
  grpc::experimental::TlsChannelCredentialsOptions options;
  options.set_certificate_provider(provider);
  options.watch_root_certs();
  options.set_verify_server_certs(true);
  return grpc::experimental::TlsCredentials(options);
}

}  // namespace

std::unique_ptr<ClosableStack> connect_grpc(const ClientArgs& args, Wakeup& wakeup,
                                            const std::function<bool()>& stop) {
  (void)wakeup;
  SockAddr addr;
  try {
    addr = resolve(args.server, SOCK_STREAM);
  } catch (const std::exception& e) {
    throw Failure(phase::kConnect, code::kConnect, std::string("--server: ") + e.what());
  }
  // --tls off (1.3): h2c with prior knowledge.
  auto creds = args.tls ? tls_credentials(args) : grpc::InsecureChannelCredentials();
  auto channel = grpc::CreateCustomChannel(addr.grpc_target(), creds,
                                           grpc_client_arguments(args.server_name));

  // Open the connection now (TLS included), so a failure surfaces in phase connect.
  const int64_t bound = now_ns() + 30 * int64_t{1000000000};
  for (;;) {
    grpc_connectivity_state state = channel->GetState(true);
    if (state == GRPC_CHANNEL_READY) break;
    if (stop()) return nullptr;
    if (state == GRPC_CHANNEL_TRANSIENT_FAILURE) {
      // The channel fails calls at once in this state, without sending anything: a call with
      // wait_for_ready off brings the library's own words for the failure.
      auto stub = pb::BenchService::NewStub(channel);
      grpc::ClientContext ctx;
      ctx.set_wait_for_ready(false);
      ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(2));
      pb::Request req;
      pb::Response resp;
      grpc::Status s = stub->Unary(&ctx, req, &resp);
      if (s.ok()) continue;  // it connected meanwhile
      bool tls = args.tls && (mentions_tls(s.error_message()) || tcp_reachable(addr));
      throw Failure(phase::kConnect, tls ? code::kTls : code::kConnect,
                    std::string(tls ? "TLS handshake with " : "connecting to ") + args.server.text +
                        " failed: " + s.error_message());
    }
    if (now_ns() >= bound) {
      throw Failure(phase::kConnect, code::kTimeout,
                    "connecting to " + args.server.text + " took longer than 30 s");
    }
    channel->WaitForStateChange(state, std::chrono::system_clock::now() + std::chrono::milliseconds(50));
  }
  return std::make_unique<GrpcClient>(args, channel);
}

}  // namespace rpcarena
