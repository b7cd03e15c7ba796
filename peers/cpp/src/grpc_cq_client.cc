// The grpc-cq stack's client (docs/stacks.md "grpc-cq"): one channel (one HTTP/2 connection) for
// every lane, Stub::PrepareAsyncUnary / PrepareAsyncCommand on one grpc::CompletionQueue, and
// one application thread (CqPump) that submits every call and drains every completion. The
// engine's load models run on that thread: the engine posts each model's start to it, and each
// completion starts the lane's next call there (closed, window, send-saturation on send); the
// open model's pacer posts each start to it; backpressure's submitter is the pump's turn hook,
// starting at most one call per turn and then yielding to the completion queue (CqPump).
#include <grpcpp/grpcpp.h>

#include "grpc_channel.h"
#include "stacks.h"
#include "grpc_cq_pump.h"
#include "rpcarena/bench/v1/bench.grpc.pb.h"
#include "transport.h"
#include "workload.h"
#include "zmq_common.h"  // apply_client_fault: the zmq stack's malformed requests

namespace rpcarena {

namespace {

OpResult ok_result(uint64_t request_bytes, uint64_t response_bytes) {
  OpResult r;
  r.ok = true;
  r.requests = 1;
  r.responses = 1;
  r.request_bytes = request_bytes;
  r.response_bytes = response_bytes;
  return r;
}

// A conformance fault's malformed call (docs/stacks.md "Conformance faults"): the server must
// refuse it with INVALID_ARGUMENT; status OK or any other status fails the validation.
OpResult fault_verdict(const std::string& mode, const grpc::Status& s) {
  std::string call = "--conformance-fault " + mode + " sent a malformed request";
  if (s.error_code() == grpc::StatusCode::INVALID_ARGUMENT) return ok_result(0, 0);
  if (s.ok()) return OpResult::failure(code::kInvalid, call + " and the server accepted it (status OK)");
  OpResult r = grpc_status_failure(s);
  if (r.code == code::kRpc) r.message = call + "; expected INVALID_ARGUMENT, got " + r.message;
  return r;
}

// One call in flight: its context, messages and status, the completion-queue tag of its Finish.
template <typename Reply>
class CqCall : public CqPump::Tag {
 public:
  void done(bool ok) override {
    OpResult r;
    if (!ok) {
      r = OpResult::failure(code::kInternal, "the completion queue failed the call's Finish");
    } else if (!fault_.empty()) {
      r = fault_verdict(fault_, status_);
    } else if (!status_.ok()) {
      r = grpc_status_failure(status_);
    } else {
      r = result(reply_);
    }
    OpSink* sink = sink_;
    delete this;
    sink->op_done(std::move(r));
  }

 protected:
  CqCall(OpSink* sink, std::string fault) : sink_(sink), fault_(std::move(fault)) {}
  virtual ~CqCall() = default;
  // StartCall and Finish: one batch that sends headers, the request and the half-close, and
  // receives the reply and the status; the tag comes back on the pump's queue.
  void begin(std::unique_ptr<grpc::ClientAsyncResponseReader<Reply>> reader) {
    reader_ = std::move(reader);
    reader_->StartCall();
    reader_->Finish(&reply_, &status_, this);
  }
  // The reply of a call that ended OK, checked.
  virtual OpResult result(const Reply& reply) = 0;

  grpc::ClientContext ctx_;
  pb::Request request_;

 private:
  OpSink* sink_;
  std::string fault_;
  Reply reply_;
  grpc::Status status_;
  std::unique_ptr<grpc::ClientAsyncResponseReader<Reply>> reader_;
};

struct Workload {
  PayloadKind kind;
  uint32_t request_size;
  uint32_t response_size;
};

class UnaryCall final : public CqCall<pb::Response> {
 public:
  UnaryCall(pb::BenchService::Stub* stub, grpc::CompletionQueue* cq, const Workload& w,
            uint64_t seq, OpSink* sink, const std::string& fault)
      : CqCall(sink, fault), w_(w), seq_(seq) {
    build_request(&request_, w.kind, seq, w.request_size, w.response_size, 0);
    if (!fault.empty()) apply_client_fault(fault, &request_);
    begin(stub->PrepareAsyncUnary(&ctx_, request_, cq));
  }

 private:
  OpResult result(const pb::Response& reply) override {
    std::string error = check_response(reply, w_.kind, seq_, w_.response_size);
    if (!error.empty()) return OpResult::failure(code::kInvalid, error);
    return ok_result(w_.request_size, w_.response_size);
  }
  Workload w_;
  uint64_t seq_;
};

// Shape send: one Command (response_size 0); the operation ends when the Empty and status OK
// were read. requests = responses (the acknowledgements) = 1, no response bytes.
class CommandCall final : public CqCall<pb::Empty> {
 public:
  CommandCall(pb::BenchService::Stub* stub, grpc::CompletionQueue* cq, const Workload& w,
              uint64_t seq, OpSink* sink, const std::string& fault)
      : CqCall(sink, fault), w_(w) {
    build_request(&request_, w.kind, seq, w.request_size, 0, 0);
    if (!fault.empty()) apply_client_fault(fault, &request_);
    begin(stub->PrepareAsyncCommand(&ctx_, request_, cq));
  }

 private:
  OpResult result(const pb::Empty&) override { return ok_result(w_.request_size, 0); }
  Workload w_;
};

class CqClient final : public ClosableStack {
 public:
  CqClient(const ClientArgs& args, std::shared_ptr<grpc::Channel> channel)
      : w_{args.payload, args.request_size, args.response_size},
        shape_(args.shape),
        fault_(args.conformance_fault),
        channel_(std::move(channel)),
        stub_(pb::BenchService::NewStub(channel_)) {}

  // Always on the pump thread (a start from elsewhere is posted there first). With a
  // conformance fault, the first call (the validation operation) is the malformed one.
  void start(uint64_t seq, OpSink* sink) override {
    if (!pump_.on_pump_thread()) {
      pump_.post([this, seq, sink] { start(seq, sink); });
      return;
    }
    std::string fault;
    fault.swap(fault_);
    if (shape_ == Shape::kSend) {
      new CommandCall(stub_.get(), pump_.cq(), w_, seq, sink, fault);
    } else {
      new UnaryCall(stub_.get(), pump_.cq(), w_, seq, sink, fault);
    }
  }
  bool accepts_call() override { return pump_.take_credit(); }
  void set_ready_hook(std::function<void()> hook) override {
    pump_.post([this, hook = std::move(hook)] { pump_.set_turn_hook(hook); });
  }
  void post(std::function<void()> fn) override { pump_.post(std::move(fn)); }
  // Client streams are not offered (the arguments refuse them before a stack exists).
  void start_saturation(SaturationSink* sink) override {
    sink->stream_done(OpResult::failure(code::kInternal, not_offered_reason(Stack::kGrpcCq, Shape::kClientStream)));
  }
  int64_t submit_cpu_ns() override { return pump_.cpu_ns(); }
  void close() override { tcp_sockets::clear(); }
  std::string transport() const override { return "tcp"; }
  std::vector<ConnReading> read_transport() override { return tcp_sockets::read(); }

 private:
  Workload w_;
  Shape shape_;
  std::string fault_;  // pump thread
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<pb::BenchService::Stub> stub_;
  CqPump pump_;
};

}  // namespace

std::unique_ptr<ClosableStack> connect_grpc_cq(const ClientArgs& args, Wakeup& wakeup,
                                               const std::function<bool()>& stop) {
  (void)wakeup;
  std::shared_ptr<grpc::Channel> channel = open_grpc_channel(args, stop);
  if (!channel) return nullptr;
  if (!args.conformance_fault.empty()) {
    diag("conformance fault " + args.conformance_fault +
         " is on: the first call is malformed on purpose; never measure with it");
  }
  return std::make_unique<CqClient>(args, std::move(channel));
}

}  // namespace rpcarena
