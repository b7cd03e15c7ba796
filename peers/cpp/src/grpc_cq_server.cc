// The grpc-cq stack's server (docs/stacks.md "grpc-cq"): a synchronous BenchService::Service
// (the reference's synchronous ServerBuilder target) with gRPC's default sync thread pool, the
// same channel arguments as the grpc stack's server (grpc_tuning.cc), Unary and Command
// implemented and the stream methods left to the generated UNIMPLEMENTED. Every request is
// checked as docs/peer-protocol.md "Validation duties" asks (workload.cc, the checks every stack
// of this peer uses) and a failing one is answered INVALID_ARGUMENT.
//
// Conformance faults (docs/stacks.md "Conformance faults"), on unary through the zmq stack's
// ZmqHandler so the two stacks misbehave identically: its [Status][Response] frames become the
// gRPC status and the one Response a synchronous handler can return. So missing-message and
// early-status answer the empty Response (status OK: a trailer cannot precede a message), and
// extra-message answers the protobuf merge of the response and the next one (seq + 1), what one
// message holding both encodings decodes to, as the Go peer's single-reply stacks do. On send,
// error-status answers INTERNAL, no-validation (skip-validation) skips the checks, and the other
// modes answer Empty (there is nothing to corrupt).
#include <grpcpp/grpcpp.h>

#include "grpc_channel.h"
#include "stacks.h"
#include "rpcarena/bench/v1/bench.grpc.pb.h"
#include "workload.h"
#include "zmq_common.h"

namespace rpcarena {

namespace {

using grpc::Status;
using grpc::StatusCode;

Status invalid(const std::string& message) { return Status(StatusCode::INVALID_ARGUMENT, message); }

// The answer of a server conformance mode to a unary request: ZmqHandler's frames, translated.
Status fault_unary(ZmqHandler& handler, const pb::Request& request, pb::Response* response) {
  std::optional<Frames> frames = handler.request({encode_id(0), request.SerializeAsString()});
  pb::Status status;
  if (!frames || frames->size() < 3 || !status.ParseFromString((*frames)[1])) {
    return Status(StatusCode::INTERNAL, "the conformance fault gave no answer");
  }
  if (status.code() != 0) return Status(static_cast<StatusCode>(status.code()), status.message());
  for (size_t i = 2; i < frames->size(); ++i) response->MergeFromString((*frames)[i]);
  return Status::OK;
}

class SyncService final : public pb::BenchService::Service {
 public:
  SyncService(ServerCounters& counters, std::string fault)
      : counters_(counters), fault_(std::move(fault)), handler_(counters, fault_) {}

  Status Unary(grpc::ServerContext*, const pb::Request* request, pb::Response* response) override {
    if (!fault_.empty()) return fault_unary(handler_, *request, response);
    counters_.rpc();
    counters_.request();
    std::string error = check_request(*request, Shape::kUnary);
    if (!error.empty()) {
      counters_.rejected(error);
      return invalid(error);
    }
    build_response(response, kind_of(*request), request->seq(), request->response_size());
    counters_.response();
    return Status::OK;
  }

  // Shape send: validated as a unary request with response_size 0, counted in `commands`, and
  // answered with Empty (the call's one response message).
  Status Command(grpc::ServerContext*, const pb::Request* request, pb::Empty*) override {
    counters_.rpc();
    counters_.request();
    if (fault_ == "error-status") {
      return Status(StatusCode::INTERNAL, "conformance fault error-status: INTERNAL instead of the answer");
    }
    std::string error = validates() ? check_request(*request, Shape::kSend) : "";
    if (!error.empty()) {
      counters_.rejected("command " + error);
      return invalid(error);
    }
    counters_.command();
    counters_.response();
    return Status::OK;
  }

 private:
  bool validates() const { return fault_ != "skip-validation" && fault_ != "no-validation"; }
  ServerCounters& counters_;
  std::string fault_;
  ZmqHandler handler_;
};

class CqServer final : public ServerStack {
 public:
  explicit CqServer(const ServerArgs& args) : service_(counters_, args.conformance_fault) {
    if (!args.conformance_fault.empty()) {
      diag("conformance fault " + args.conformance_fault +
           " is on: this server misbehaves on purpose; never measure with it");
    }
    // No SetSyncServerOption: gRPC's default sync thread pool.
    server_ = grpc_listen(args, &service_, &address_);
  }
  std::string address() const override { return address_; }
  void stop() override { server_->Shutdown(std::chrono::system_clock::now()); }
  Json counters() const override { return counters_.to_json(); }
  std::string first_rejection() const override { return counters_.first_rejection(); }

 private:
  ServerCounters counters_;
  SyncService service_;
  std::unique_ptr<grpc::Server> server_;
  std::string address_;
};

}  // namespace

std::unique_ptr<ServerStack> serve_grpc_cq(const ServerArgs& args) {
  return std::make_unique<CqServer>(args);
}

}  // namespace rpcarena
