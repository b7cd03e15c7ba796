// The zmq stack's client (docs/stacks.md "zmq"): one request socket and one command socket (two
// ROUTERs connected to the server's), every lane multiplexed on them by an 8-byte operation id,
// and one thread whose zmq_poll loop runs the whole load model: the engine's starts are posted to
// it (an eventfd wakes it), it sends, reads replies, validates them and completes operations, so
// `submit_cpu_ns` is that thread's CPU time.
//
// A message is accepted when zmq_send of its last frame with ZMQ_DONTWAIT succeeded. EAGAIN (the
// socket is at its high-water mark) parks it, and everything after it, until ZMQ_POLLOUT: that is
// the transport's push-back, which the backpressure model reads through accepts_call().
#include <pthread.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <optional>
#include <mutex>
#include <thread>
#include <unordered_map>

#include <zmq_addon.hpp>

#include "clock.h"
#include "events.h"
#include "stacks.h"
#include "zmq_common.h"

namespace rpcarena {

namespace {

constexpr int64_t kConnectBoundNs = 30 * int64_t{1000000000};
constexpr int kFaultLingerMs = 1000;

enum class SendResult { kSent, kFull, kUnreachable };

// [routing id][id][body] without waiting.
SendResult send_message(zmq::socket_t& s, const char* rid, const std::string& id, const std::string& body) {
  try {
    if (!s.send(zmq::buffer(std::string_view(rid)), zmq::send_flags::sndmore | zmq::send_flags::dontwait)) {
      return SendResult::kFull;
    }
    s.send(zmq::buffer(id), zmq::send_flags::sndmore | zmq::send_flags::dontwait);
    s.send(zmq::buffer(body), zmq::send_flags::dontwait);
  } catch (const zmq::error_t& e) {
    if (e.num() == EHOSTUNREACH) return SendResult::kUnreachable;
    throw;
  }
  return SendResult::kSent;
}

// Sends HELLO to `rid` until the connection's handshake lets it through (every 1 ms), then, on
// the request endpoint, reads [HELLO][PORT]. Returns the port ("" on the command endpoint), or
// nullopt when stop() became true.
std::optional<std::string> hello(zmq::socket_t& s, const char* rid, bool want_port,
                                 const std::string& endpoint, int64_t bound,
                                 const std::function<bool()>& stop) {
  for (;;) {
    if (stop()) return std::nullopt;
    try {
      if (s.send(zmq::buffer(std::string_view(rid)), zmq::send_flags::sndmore | zmq::send_flags::dontwait) &&
          s.send(zmq::str_buffer("HELLO"), zmq::send_flags::dontwait)) {
        break;
      }
    } catch (const zmq::error_t& e) {
      if (e.num() != EHOSTUNREACH) throw Failure(phase::kConnect, code::kConnect, endpoint + ": " + e.what());
    }
    if (now_ns() >= bound) {
      throw Failure(phase::kConnect, code::kConnect,
                    "no zmq connection to " + endpoint + " within 30 s (the HELLO was never routable to " + rid + ")");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (!want_port) return std::string();
  zmq::pollitem_t item{s.handle(), 0, ZMQ_POLLIN, 0};
  while (zmq::poll(&item, 1, std::chrono::milliseconds(50)) == 0) {
    if (stop()) return std::nullopt;
    if (now_ns() >= bound) {
      throw Failure(phase::kConnect, code::kTimeout, "no HELLO answer from " + endpoint + " within 30 s");
    }
  }
  std::vector<zmq::message_t> parts;
  (void)zmq::recv_multipart(s, std::back_inserter(parts));
  std::string port = parts.size() == 3 ? parts[2].to_string() : "";
  if (parts.size() != 3 || parts[1].to_string() != kZmqHello || port.empty() ||
      port.find_first_not_of("0123456789") != std::string::npos || port.size() > 5) {
    Frames frames;
    for (auto& p : parts) frames.push_back(p.to_string());
    throw Failure(phase::kConnect, code::kInvalid,
                  "the HELLO answer from " + endpoint + " is not [HELLO][PORT]: " + describe_frames(frames));
  }
  return port;
}

// One operation waiting for its message to be accepted, or (unary) for its reply.
struct Op {
  uint64_t id = 0;
  uint64_t seq = 0;
  std::string body;
  OpSink* sink = nullptr;
  bool fault = false;  // the conformance fault's malformed call
};

class ZmqClient final : public ClosableStack {
 public:
  ZmqClient(const ClientArgs& args, std::unique_ptr<zmq::context_t> ctx, zmq::socket_t requests,
            zmq::socket_t commands, std::string request_endpoint, std::string command_endpoint)
      : args_(args), ctx_(std::move(ctx)), requests_(std::move(requests)),
        commands_(std::move(commands)), request_endpoint_(std::move(request_endpoint)),
        command_endpoint_(std::move(command_endpoint)), fault_pending_(!args.conformance_fault.empty()) {
    wake_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    thread_ = std::thread([this] { loop(); });
    std::unique_lock<std::mutex> lock(post_mutex_);
    clock_ready_.wait(lock, [this] { return clock_known_; });
  }

  void start(uint64_t seq, OpSink* sink) override;
  bool accepts_call() override { return blocked().empty(); }
  void set_ready_hook(std::function<void()> hook) override { ready_hook_ = std::move(hook); }
  void post(std::function<void()> fn) override {
    bool was_empty;
    {
      std::lock_guard<std::mutex> lock(post_mutex_);
      was_empty = posted_.empty();
      posted_.push_back(std::move(fn));
    }
    if (was_empty) wake();
  }
  void start_saturation(SaturationSink* sink) override {
    sink->stream_done(OpResult::failure(code::kInternal, "the zmq stack has no client streams"));
  }
  int connections() const override { return 2; }
  int64_t submit_cpu_ns() override {
    timespec ts;
    if (clock_gettime(cpu_clock_, &ts) != 0) return -1;
    return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
  }
  std::string timeout_detail() override {
    bool send = args_.shape == Shape::kSend;
    std::string last = std::to_string(last_id_.load(std::memory_order_relaxed));
    if (send) {
      return "the command endpoint " + command_endpoint_ + " did not accept them within " +
             std::to_string(args_.drain_ms) + " ms (at its high-water mark); last command sent: id " + last;
    }
    return "no reply from " + request_endpoint_ + " within " + std::to_string(args_.drain_ms) +
           " ms; last request sent: id " + last;
  }
  std::string describe_in_flight() override {
    return " " + std::to_string(waiting_.load()) + " requests without a reply, " +
           std::to_string(parked_.load()) + " messages waiting for room at the high-water mark";
  }
  void close() override {
    stopping_.store(true);
    wake();
    if (args_.conformance_fault.empty()) return;  // linger 0: nothing unsent is waited for
    // A conformance fault's last command must reach the server before the process exits (the kit
    // reads the server's counters next): this socket lingers until libzmq has sent it.
    thread_.join();
    for (zmq::socket_t* s : {&requests_, &commands_}) {
      s->set(zmq::sockopt::linger, kFaultLingerMs);
      s->close();
    }
    ctx_->close();
  }

 private:
  void wake() {
    uint64_t one = 1;
    (void)!write(wake_, &one, sizeof one);
  }
  std::deque<Op>& blocked() { return args_.shape == Shape::kSend ? blocked_commands_ : blocked_requests_; }
  zmq::socket_t& socket() { return args_.shape == Shape::kSend ? commands_ : requests_; }
  const char* rid() const { return args_.shape == Shape::kSend ? kZmqCommandId : kZmqRequestId; }

  void loop();
  void run_posted();
  bool try_send(Op& op);
  void flush_blocked();
  void read_replies();
  void on_reply(const Frames& frames);
  OpResult judge(const Op& op, const ZmqReply& reply);
  void complete(OpSink* sink, OpResult r) { done_.emplace_back(sink, std::move(r)); }
  void run_completions();

  const ClientArgs& args_;
  std::unique_ptr<zmq::context_t> ctx_;
  zmq::socket_t requests_, commands_;
  std::string request_endpoint_, command_endpoint_;
  int wake_ = -1;
  std::thread thread_;
  clockid_t cpu_clock_{};
  bool clock_known_ = false;
  std::condition_variable clock_ready_;
  std::atomic<bool> stopping_{false};
  std::mutex post_mutex_;
  std::vector<std::function<void()>> posted_;
  // Loop thread only:
  std::function<void()> ready_hook_;
  uint64_t next_id_ = 0;
  bool fault_pending_;
  std::unordered_map<uint64_t, Op> in_flight_;
  std::deque<Op> blocked_requests_, blocked_commands_;
  std::deque<std::pair<OpSink*, OpResult>> done_;
  std::string stray_;  // a reply that matched no operation, failing the next one to end
  // Read by describe_in_flight / timeout_detail from the main thread:
  std::atomic<uint64_t> last_id_{0};
  std::atomic<uint64_t> waiting_{0}, parked_{0};
};

void ZmqClient::start(uint64_t seq, OpSink* sink) {
  Op op;
  op.id = ++next_id_;
  op.seq = seq;
  op.sink = sink;
  pb::Request request;
  bool send = args_.shape == Shape::kSend;
  build_request(&request, args_.payload, seq, args_.request_size, send ? 0 : args_.response_size, 0);
  if (fault_pending_) {
    fault_pending_ = false;
    op.fault = apply_client_fault(args_.conformance_fault, &request);
    diag("conformance fault " + args_.conformance_fault + ": the first " + (send ? "command" : "request") +
         " is malformed on purpose");
  }
  op.body = request.SerializeAsString();
  std::deque<Op>& queue = blocked();
  if (!queue.empty() || !try_send(op)) {
    queue.push_back(std::move(op));
    parked_.store(queue.size(), std::memory_order_relaxed);
  }
}

// Sends `op`: false when the socket is at its high-water mark (the caller parks it).
bool ZmqClient::try_send(Op& op) {
  SendResult r = send_message(socket(), rid(), encode_id(op.id), op.body);
  if (r == SendResult::kFull) return false;
  last_id_.store(op.id, std::memory_order_relaxed);
  if (r == SendResult::kUnreachable) {
    complete(op.sink, OpResult::failure(code::kConnect, std::string("zmq_send to ") + rid() +
                                                            ": the server is unreachable (EHOSTUNREACH)"));
  } else if (args_.shape == Shape::kSend) {
    OpResult ok;
    ok.ok = true;
    ok.requests = 1;
    ok.request_bytes = args_.request_size;
    complete(op.sink, std::move(ok));
  } else {
    uint64_t id = op.id;
    in_flight_.emplace(id, std::move(op));
    waiting_.store(in_flight_.size(), std::memory_order_relaxed);
  }
  return true;
}

void ZmqClient::flush_blocked() {
  std::deque<Op>& queue = blocked();
  while (!queue.empty() && try_send(queue.front())) queue.pop_front();
  parked_.store(queue.size(), std::memory_order_relaxed);
  if (queue.empty() && ready_hook_) ready_hook_();
}

void ZmqClient::run_posted() {
  uint64_t count;
  (void)!read(wake_, &count, sizeof count);
  std::vector<std::function<void()>> tasks;
  {
    std::lock_guard<std::mutex> lock(post_mutex_);
    tasks.swap(posted_);
  }
  for (auto& task : tasks) task();
}

void ZmqClient::run_completions() {
  std::deque<std::pair<OpSink*, OpResult>> batch;
  batch.swap(done_);
  for (auto& [sink, result] : batch) sink->op_done(std::move(result));
}

void ZmqClient::loop() {
  pthread_getcpuclockid(pthread_self(), &cpu_clock_);
  {
    std::lock_guard<std::mutex> lock(post_mutex_);
    clock_known_ = true;
  }
  clock_ready_.notify_all();
  zmq::pollitem_t items[3] = {{requests_.handle(), 0, ZMQ_POLLIN, 0},
                              {commands_.handle(), 0, ZMQ_POLLIN, 0},
                              {nullptr, wake_, ZMQ_POLLIN, 0}};
  while (!stopping_.load(std::memory_order_relaxed)) {
    items[0].events = ZMQ_POLLIN | (blocked_requests_.empty() ? 0 : ZMQ_POLLOUT);
    items[1].events = ZMQ_POLLIN | (blocked_commands_.empty() ? 0 : ZMQ_POLLOUT);
    // Completions still to hand on: look at the sockets without waiting.
    zmq::poll(items, 3, std::chrono::milliseconds(done_.empty() ? -1 : 0));
    if (items[2].revents & ZMQ_POLLIN) run_posted();
    if (items[0].revents & ZMQ_POLLIN) read_replies();
    if (items[1].revents & ZMQ_POLLIN) {  // the server sends nothing here; discard what comes
      std::vector<zmq::message_t> parts;
      while (zmq::recv_multipart(commands_, std::back_inserter(parts), zmq::recv_flags::dontwait)) parts.clear();
    }
    if ((items[0].revents | items[1].revents) & ZMQ_POLLOUT) flush_blocked();
    run_completions();
  }
}

void ZmqClient::read_replies() {
  Frames frames;
  for (int i = 0; i < 1024; ++i) {
    std::vector<zmq::message_t> parts;
    if (!zmq::recv_multipart(requests_, std::back_inserter(parts), zmq::recv_flags::dontwait)) return;
    frames.clear();
    for (size_t k = 1; k < parts.size(); ++k) frames.push_back(parts[k].to_string());  // after the routing id
    on_reply(frames);
  }
}

void ZmqClient::on_reply(const Frames& frames) {
  ZmqReply reply = parse_reply(frames);
  auto it = reply.id ? in_flight_.find(*reply.id) : in_flight_.end();
  if (it == in_flight_.end()) {
    // Nobody waits for it; it fails the sample through the next operation to end.
    std::string why = reply.error.empty() ? "a reply for id " + std::to_string(reply.id.value_or(0)) +
                                                " that is not in flight: " + describe_frames(frames)
                                          : reply.error;
    diag("zmq: " + why);
    if (stray_.empty()) stray_ = why;
    if (!in_flight_.empty()) it = in_flight_.begin();
    else return;
  }
  Op op = std::move(it->second);
  in_flight_.erase(it);
  waiting_.store(in_flight_.size(), std::memory_order_relaxed);
  OpResult r = stray_.empty() ? judge(op, reply) : OpResult::failure(code::kInvalid, stray_);
  stray_.clear();
  complete(op.sink, std::move(r));
}

OpResult ZmqClient::judge(const Op& op, const ZmqReply& reply) {
  if (!reply.error.empty()) return OpResult::failure(code::kInvalid, reply.error);
  if (op.fault) {  // the malformed call must be refused with INVALID_ARGUMENT
    if (reply.status == kZmqStatusInvalid) return OpResult{true, "", "", 1, 1, 0, 0};
    std::string call = "--conformance-fault " + args_.conformance_fault + " sent a malformed request";
    if (reply.status == 0) return OpResult::failure(code::kInvalid, "the server accepted it: " + call);
    return OpResult::failure(code::kRpc, call + "; the server answered status " + std::to_string(reply.status) +
                                             " (" + reply.status_message + "), expected INVALID_ARGUMENT (3)");
  }
  if (reply.status != 0) {
    return OpResult::failure(code::kRpc, "status " + std::to_string(reply.status) + ": " + reply.status_message);
  }
  std::string error = check_response(reply.response, args_.payload, op.seq, args_.response_size);
  if (!error.empty()) return OpResult::failure(code::kInvalid, error);
  OpResult ok;
  ok.ok = true;
  ok.requests = ok.responses = 1;
  ok.request_bytes = args_.request_size;
  ok.response_bytes = args_.response_size;
  return ok;
}

}  // namespace

std::unique_ptr<ClosableStack> connect_zmq(const ClientArgs& args, Wakeup&,
                                           const std::function<bool()>& stop) {
  if (!args.conformance_fault.empty()) {
    diag("conformance fault " + args.conformance_fault + " is on: this client misbehaves on purpose");
  }
  const int64_t bound = now_ns() + kConnectBoundNs;
  auto ctx = std::make_unique<zmq::context_t>(kZmqIoThreads);
  bool v6 = args.server.host.find(':') != std::string::npos;
  zmq::socket_t requests = router_socket(*ctx, "", v6);
  zmq::socket_t commands = router_socket(*ctx, "", v6);
  std::string request_endpoint = tcp_endpoint(args.server.host, args.server.port);
  try {
    requests.connect(request_endpoint);
  } catch (const zmq::error_t& e) {
    throw Failure(phase::kConnect, code::kConnect, "zmq_connect " + request_endpoint + ": " + e.what());
  }
  std::optional<std::string> port = hello(requests, kZmqRequestId, true, request_endpoint, bound, stop);
  if (!port) return nullptr;
  std::string command_endpoint = tcp_endpoint(args.server.host, static_cast<uint16_t>(std::stoul(*port)));
  try {
    commands.connect(command_endpoint);
  } catch (const zmq::error_t& e) {
    throw Failure(phase::kConnect, code::kConnect, "zmq_connect " + command_endpoint + ": " + e.what());
  }
  if (!hello(commands, kZmqCommandId, false, command_endpoint, bound, stop)) return nullptr;
  return std::make_unique<ZmqClient>(args, std::move(ctx), std::move(requests), std::move(commands),
                                     request_endpoint, command_endpoint);
}

}  // namespace rpcarena
