// The grpc stack's server: gRPC C++ callback API (one reactor per call), checking every request
// as docs/peer-protocol.md "Validation duties" asks and answering INVALID_ARGUMENT when one fails.
#include <deque>
#include <mutex>
#include <optional>

#include <grpcpp/grpcpp.h>
#include <grpcpp/security/server_credentials.h>
#include <grpcpp/security/tls_certificate_provider.h>
#include <grpcpp/security/tls_credentials_options.h>

#include "grpc_tuning.h"
#include "net.h"
#include "rpcarena/bench/v1/bench.grpc.pb.h"
#include "stacks.h"
#include "workload.h"

namespace rpcarena {

namespace {

using grpc::CallbackServerContext;
using grpc::Status;
using grpc::StatusCode;

Status invalid(const std::string& message) { return Status(StatusCode::INVALID_ARGUMENT, message); }

// Client stream: every request checked; the summary after the client's half-close.
class ClientStreamReactor final : public grpc::ServerReadReactor<pb::Request> {
 public:
  ClientStreamReactor(pb::Summary* summary, ServerCounters& counters)
      : summary_(summary), counters_(counters) {
    StartRead(&request_);
  }
  void OnReadDone(bool ok) override {
    if (!ok) {  // the client ended its stream (or went away)
      if (check_.count() == 0) {
        reject("a client stream carries at least one request");
        return;
      }
      build_summary(summary_, check_);
      counters_.response();
      Finish(Status::OK);
      return;
    }
    counters_.request();
    std::string error = check_.next(request_, Shape::kClientStream);
    if (!error.empty()) {
      reject(error);
      return;
    }
    StartRead(&request_);
  }
  void OnDone() override { delete this; }

 private:
  void reject(const std::string& message) {
    counters_.rejected(message);
    Finish(invalid(message));
  }
  pb::Summary* summary_;
  ServerCounters& counters_;
  pb::Request request_;
  StreamCheck check_;
};

// Server stream: N responses, the last one sent with the status.
class ServerStreamReactor final : public grpc::ServerWriteReactor<pb::Response> {
 public:
  ServerStreamReactor(const pb::Request* request, ServerCounters& counters)
      : request_(*request), counters_(counters) {
    counters_.request();
    std::string error = check_request(request_, Shape::kServerStream);
    if (!error.empty()) {
      counters_.rejected(error);
      Finish(invalid(error));
      return;
    }
    kind_ = kind_of(request_);
    total_ = request_.response_messages();
    next();
  }
  void OnWriteDone(bool ok) override {
    if (!ok) {
      Finish(Status(StatusCode::CANCELLED, "the client went away"));
      return;
    }
    next();
  }
  void OnDone() override { delete this; }

 private:
  void next() {
    build_response(&response_, kind_, index_, request_.response_size());
    counters_.response();
    ++index_;
    if (index_ == total_) {
      StartWriteAndFinish(&response_, grpc::WriteOptions(), Status::OK);
    } else {
      StartWrite(&response_);
    }
  }
  pb::Request request_;
  ServerCounters& counters_;
  pb::Response response_;
  PayloadKind kind_ = PayloadKind::kZeros;
  uint64_t index_ = 0;
  uint64_t total_ = 0;
};

// Bidi: each request answered as it arrives; reads and writes run concurrently, so the reactor
// keeps its own small lock (per call, never shared). Decisions are made under the lock and the
// library is called after it is released.
class BidiReactor final : public grpc::ServerBidiReactor<pb::Request, pb::Response> {
 public:
  explicit BidiReactor(ServerCounters& counters) : counters_(counters) { StartRead(&request_); }

  void OnReadDone(bool ok) override {
    Actions act;
    {
      std::lock_guard<std::mutex> lock(m_);
      if (!ok) {
        reads_done_ = true;
        if (check_.count() == 0) {
          end_locked(act, invalid("a bidi call carries at least one request"), true);
        } else if (queue_.empty() && !writing_) {
          end_locked(act, Status::OK, false);
        }
      } else {
        counters_.request();
        std::string error = check_.next(request_, Shape::kBidi);
        if (!error.empty()) {
          reads_done_ = true;
          end_locked(act, invalid(error), true);
        } else {
          queue_.emplace_back();
          build_response(&queue_.back(), kind_of(request_), request_.seq(),
                         request_.response_size());
          counters_.response();
          if (!writing_) {
            writing_ = true;
            act.write = &queue_.front();
          }
          act.read = true;
        }
      }
    }
    perform(act);
  }

  void OnWriteDone(bool ok) override {
    Actions act;
    {
      std::lock_guard<std::mutex> lock(m_);
      queue_.pop_front();
      writing_ = false;
      if (!ok) {
        queue_.clear();
        if (!finished_) {
          finished_ = true;
          act.finish = Status(StatusCode::CANCELLED, "the client went away");
        }
      } else if (pending_) {
        finished_ = true;
        act.finish = *pending_;
        pending_.reset();
      } else if (!queue_.empty()) {
        writing_ = true;
        act.write = &queue_.front();
      } else if (reads_done_ && !finished_) {
        finished_ = true;
        act.finish = Status::OK;
      }
    }
    perform(act);
  }

  void OnDone() override { delete this; }

 private:
  struct Actions {
    const pb::Response* write = nullptr;
    bool read = false;
    std::optional<Status> finish;
  };
  // Ends the call with `s`, after the write in progress if there is one (nothing more is sent).
  void end_locked(Actions& act, const Status& s, bool rejected) {
    if (finished_ || pending_) return;
    if (rejected) counters_.rejected(s.error_message());
    if (writing_) {
      queue_.resize(1);
      pending_ = s;
    } else {
      queue_.clear();
      finished_ = true;
      act.finish = s;
    }
  }
  void perform(const Actions& act) {
    if (act.write) StartWrite(act.write);
    if (act.finish) {
      Finish(*act.finish);
      return;
    }
    if (act.read) StartRead(&request_);
  }
  ServerCounters& counters_;
  std::mutex m_;
  pb::Request request_;
  StreamCheck check_;
  std::deque<pb::Response> queue_;
  bool writing_ = false;
  bool reads_done_ = false;
  bool finished_ = false;
  std::optional<Status> pending_;
};

class Service final : public pb::BenchService::CallbackService {
 public:
  explicit Service(ServerCounters& counters) : counters_(counters) {}

  grpc::ServerUnaryReactor* Unary(CallbackServerContext* ctx, const pb::Request* request,
                                  pb::Response* response) override {
    counters_.rpc();
    counters_.request();
    auto* reactor = ctx->DefaultReactor();
    std::string error = check_request(*request, Shape::kUnary);
    if (!error.empty()) {
      counters_.rejected(error);
      reactor->Finish(invalid(error));
      return reactor;
    }
    build_response(response, kind_of(*request), request->seq(), request->response_size());
    counters_.response();
    reactor->Finish(Status::OK);
    return reactor;
  }
  // 1.3, shape send: a one-way command, validated as a unary request (response_size 0), counted
  // in `commands` and answered with Empty (the Empty is the call's one response message).
  grpc::ServerUnaryReactor* Command(CallbackServerContext* ctx, const pb::Request* request,
                                    pb::Empty*) override {
    counters_.rpc();
    counters_.request();
    auto* reactor = ctx->DefaultReactor();
    std::string error = check_request(*request, Shape::kSend);
    if (!error.empty()) {
      counters_.rejected(error);
      reactor->Finish(invalid(error));
      return reactor;
    }
    counters_.command();
    counters_.response();
    reactor->Finish(Status::OK);
    return reactor;
  }
  grpc::ServerReadReactor<pb::Request>* ClientStream(CallbackServerContext*,
                                                     pb::Summary* summary) override {
    counters_.rpc();
    return new ClientStreamReactor(summary, counters_);
  }
  grpc::ServerWriteReactor<pb::Response>* ServerStream(CallbackServerContext*,
                                                       const pb::Request* request) override {
    counters_.rpc();
    return new ServerStreamReactor(request, counters_);
  }
  grpc::ServerBidiReactor<pb::Request, pb::Response>* Bidi(CallbackServerContext*) override {
    counters_.rpc();
    return new BidiReactor(counters_);
  }

 private:
  ServerCounters& counters_;
};

class GrpcServer final : public ServerStack {
 public:
  GrpcServer(const ServerArgs& args) : service_(counters_) {
    // --tls off (1.3): h2c with prior knowledge.
    auto creds = args.tls ? tls_credentials(args) : grpc::InsecureServerCredentials();
    SockAddr addr;
    try {
      addr = resolve(args.listen, SOCK_STREAM);
    } catch (const std::exception& e) {
      throw Failure(phase::kListen, code::kConfig, std::string("--listen: ") + e.what());
    }
    grpc::ServerBuilder builder;
    grpc_configure_server(builder);
    int port = 0;
    // gRPC's URI form of exactly this address ("ipv4:127.0.0.1:0" is not accepted by the
    // builder; "127.0.0.1:0" and "[::1]:0" are).
    builder.AddListeningPort(addr.to_string(), creds, &port);
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
    if (!server_ || port == 0) {
      throw Failure(phase::kListen, code::kConfig,
                    "cannot listen on " + args.listen.text +
                        " (address in use, not an address of this host, or the certificate and key "
                        "do not match; gRPC's log on stderr says which)");
    }
    SockAddr bound = addr;
    if (bound.family() == AF_INET6) {
      reinterpret_cast<sockaddr_in6*>(&bound.storage)->sin6_port = htons(static_cast<uint16_t>(port));
    } else {
      reinterpret_cast<sockaddr_in*>(&bound.storage)->sin_port = htons(static_cast<uint16_t>(port));
    }
    address_ = bound.to_string();
  }
  std::string address() const override { return address_; }
  void stop() override {
    server_->Shutdown(std::chrono::system_clock::now());  // cut calls still in progress
  }
  Json counters() const override { return counters_.to_json(); }
  std::string first_rejection() const override { return counters_.first_rejection(); }

 private:
  // --cert and --key, checked (config errors name the file).
  static std::shared_ptr<grpc::ServerCredentials> tls_credentials(const ServerArgs& args) {
    std::string cert = read_file("--cert", args.cert);
    std::string key = read_file("--key", args.key);
    try {
      check_certificates_pem(cert);
    } catch (const std::exception& e) {
      throw Failure(phase::kStartup, code::kConfig, "--cert " + args.cert + ": " + e.what());
    }
    if (key.find("PRIVATE KEY-----") == std::string::npos) {
      throw Failure(phase::kStartup, code::kConfig,
                    "--key " + args.key + " holds no PEM private key");
    }
    auto provider = std::make_shared<grpc::experimental::StaticDataCertificateProvider>(
        std::vector<grpc::experimental::IdentityKeyCertPair>{{key, cert}});
    grpc::experimental::TlsServerCredentialsOptions options(provider);
    options.watch_identity_key_cert_pairs();
    options.set_cert_request_type(GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
    return grpc::experimental::TlsServerCredentials(options);
  }

  ServerCounters counters_;
  Service service_;
  std::unique_ptr<grpc::Server> server_;
  std::string address_;
};

}  // namespace

std::unique_ptr<ServerStack> serve_grpc(const ServerArgs& args) {
  return std::make_unique<GrpcServer>(args);
}

}  // namespace rpcarena
