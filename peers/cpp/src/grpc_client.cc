// The grpc stack's client: one gRPC channel (one HTTP/2 connection) shared by every lane; each
// operation is one call on the callback API (the unary callback, ClientWriteReactor,
// ClientReadReactor, ClientBidiReactor), validated as docs/peer-protocol.md asks.
#include <arpa/inet.h>
#include <sys/socket.h>
#include <unistd.h>

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

struct UnaryCall {
  grpc::ClientContext ctx;
  pb::Request request;
  pb::Response response;
};

class ClientStreamCall final : public grpc::ClientWriteReactor<pb::Request> {
 public:
  ClientStreamCall(pb::BenchService::Stub* stub, const Workload& w, OpSink* sink)
      : w_(w), sink_(sink) {
    stub->async()->ClientStream(&ctx_, &summary_, this);
    write_next();
    StartCall();
  }
  void OnWriteDone(bool ok) override {
    if (ok && index_ < w_.messages) write_next();
  }
  void OnDone(const grpc::Status& s) override {
    OpResult r;
    if (!s.ok()) {
      r = status_failure(s);
    } else {
      std::string error = check_summary(summary_, w_.kind, w_.messages, w_.request_size, w_.response_size);
      r = error.empty()
              ? ok_result(w_.messages, 1, uint64_t{w_.messages} * w_.request_size, w_.response_size)
              : OpResult::failure(code::kInvalid, error);
    }
    OpSink* sink = sink_;
    delete this;
    sink->op_done(std::move(r));
  }

 private:
  void write_next() { write_request(this, &request_, w_, &index_); }
  Workload w_;
  OpSink* sink_;
  grpc::ClientContext ctx_;
  pb::Request request_;
  pb::Summary summary_;
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
    if (got_ >= w_.messages) {
      error = "more than " + std::to_string(w_.messages) + " responses";
    } else {
      error = check_response(response_, w_.kind, got_, w_.response_size);
    }
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
    } else if (got_ != w_.messages) {
      r = OpResult::failure(code::kInvalid, "status OK after " + std::to_string(got_) + " of " +
                                                std::to_string(w_.messages) + " responses");
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
class SaturationCall final : public grpc::ClientWriteReactor<pb::Request> {
 public:
  SaturationCall(pb::BenchService::Stub* stub, const Workload& w, SaturationSink* sink)
      : w_(w), sink_(sink) {
    stub->async()->ClientStream(&ctx_, &summary_, this);
    StartCall();
    next();
  }
  void OnWriteDone(bool ok) override {
    if (!ok) return;
    sink_->message_accepted();
    ++sent_;
    next();
  }
  void OnWritesDoneDone(bool) override {}
  void OnDone(const grpc::Status& s) override {
    OpResult r;
    if (!s.ok()) {
      r = status_failure(s);
    } else {
      std::string error = check_summary(summary_, w_.kind, sent_, w_.request_size, w_.response_size);
      r = error.empty() ? ok_result(sent_, 1, sent_ * w_.request_size, w_.response_size)
                        : OpResult::failure(code::kInvalid, error);
    }
    SaturationSink* sink = sink_;
    delete this;
    sink->stream_done(std::move(r));
  }

 private:
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
  grpc::ClientContext ctx_;
  pb::Request request_;
  pb::Summary summary_;
  uint64_t sent_ = 0;
};

class GrpcClient final : public ClosableStack {
 public:
  GrpcClient(const ClientArgs& args, std::shared_ptr<grpc::Channel> channel)
      : args_(args),
        w_{args.payload, args.request_size, args.response_size, args.messages},
        channel_(std::move(channel)),
        stub_(pb::BenchService::NewStub(channel_)) {}

  void start(uint64_t seq, OpSink* sink) override {
    switch (args_.shape) {
      case Shape::kUnary: start_unary(seq, sink); break;
      case Shape::kClientStream: new ClientStreamCall(stub_.get(), w_, sink); break;
      case Shape::kServerStream: new ServerStreamCall(stub_.get(), w_, seq, sink); break;
      case Shape::kBidi: new BidiCall(stub_.get(), w_, sink); break;
    }
  }
  void start_saturation(SaturationSink* sink) override {
    new SaturationCall(stub_.get(), w_, sink);
  }
  void close() override {}

 private:
  void start_unary(uint64_t seq, OpSink* sink) {
    auto* call = new UnaryCall;
    build_request(&call->request, w_.kind, seq, w_.request_size, w_.response_size, 0);
    Workload w = w_;
    stub_->async()->Unary(&call->ctx, &call->request, &call->response,
                          [call, sink, seq, w](grpc::Status s) {
                            OpResult r;
                            if (!s.ok()) {
                              r = status_failure(s);
                            } else {
                              std::string error = check_response(call->response, w.kind, seq, w.response_size);
                              r = error.empty() ? ok_result(1, 1, w.request_size, w.response_size)
                                                : OpResult::failure(code::kInvalid, error);
                            }
                            delete call;
                            sink->op_done(std::move(r));
                          });
  }
  const ClientArgs& args_;
  Workload w_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<pb::BenchService::Stub> stub_;
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

}  // namespace

std::unique_ptr<ClosableStack> connect_grpc(const ClientArgs& args, Wakeup& wakeup,
                                            const std::function<bool()>& stop) {
  (void)wakeup;
  std::string ca = read_file("--ca", args.ca);
  SockAddr addr;
  try {
    addr = resolve(args.server, SOCK_STREAM);
  } catch (const std::exception& e) {
    throw Failure(phase::kConnect, code::kConnect, std::string("--server: ") + e.what());
  }
  auto provider = std::make_shared<grpc::experimental::StaticDataCertificateProvider>(ca);
  grpc::experimental::TlsChannelCredentialsOptions options;
  options.set_certificate_provider(provider);
  options.watch_root_certs();
  options.set_verify_server_certs(true);
  auto creds = grpc::experimental::TlsCredentials(options);
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
      bool tls = mentions_tls(s.error_message()) || tcp_reachable(addr);
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
