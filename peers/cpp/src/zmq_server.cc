// The zmq stack's server (docs/stacks.md "zmq"): two ROUTER sockets, the request endpoint at
// --listen and the command endpoint on a free port of the same host, served by one thread's
// zmq_poll loop (libzmq's one I/O thread moves the bytes). A reply waits at the client's
// high-water mark (the loop reads no requests meanwhile, so the push-back reaches the client's
// EAGAIN); one that cannot be delivered (EHOSTUNREACH: the client left) is counted in `dropped`.
#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include <zmq_addon.hpp>

#include "events.h"
#include "stacks.h"
#include "zmq_common.h"

namespace rpcarena {

namespace {

// Receives one whole message without waiting; false when none is queued.
bool receive(zmq::socket_t& s, Frames* frames) {
  std::vector<zmq::message_t> parts;
  if (!zmq::recv_multipart(s, std::back_inserter(parts), zmq::recv_flags::dontwait)) return false;
  frames->clear();
  for (zmq::message_t& m : parts) frames->push_back(m.to_string());
  return true;
}

// Sends [routing id][frames...] without waiting: "" when queued, "EAGAIN" at the client's
// high-water mark, else why it cannot be delivered.
std::string try_send_to(zmq::socket_t& s, const std::string& rid, const Frames& frames) {
  try {
    if (!s.send(zmq::buffer(rid), zmq::send_flags::sndmore | zmq::send_flags::dontwait)) return "EAGAIN";
    for (size_t i = 0; i < frames.size(); ++i) {
      auto more = i + 1 < frames.size() ? zmq::send_flags::sndmore : zmq::send_flags::none;
      s.send(zmq::buffer(frames[i]), more | zmq::send_flags::dontwait);
    }
  } catch (const zmq::error_t& e) {
    return std::string("zmq_send failed: ") + e.what();
  }
  return "";
}

class ZmqServer final : public ServerStack {
 public:
  explicit ZmqServer(const ServerArgs& args)
      : counters_(true), handler_(counters_, args.conformance_fault), ctx_(kZmqIoThreads) {
    if (!args.conformance_fault.empty()) {
      diag("conformance fault " + args.conformance_fault + " is on: this server misbehaves on purpose; never measure with it");
    }
    bool v6 = args.listen.host.find(':') != std::string::npos;
    requests_ = router_socket(ctx_, kZmqRequestId, v6);
    commands_ = router_socket(ctx_, kZmqCommandId, v6);
    try {
      requests_.bind(tcp_endpoint(args.listen.host, args.listen.port));
      commands_.bind(tcp_endpoint(args.listen.host, 0));
    } catch (const zmq::error_t& e) {
      throw Failure(phase::kListen, code::kConfig,
                    "cannot listen on " + args.listen.text + " (zmq_bind: " + e.what() + ")");
    }
    uint16_t port = endpoint_port(requests_.get(zmq::sockopt::last_endpoint));
    command_port_ = std::to_string(endpoint_port(commands_.get(zmq::sockopt::last_endpoint)));
    address_ = v6 ? "[" + args.listen.host + "]:" + std::to_string(port)
                  : args.listen.host + ":" + std::to_string(port);
    wake_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    thread_ = std::thread([this] { loop(); });
  }
  std::string address() const override { return address_; }
  void stop() override {
    stopping_.store(true);
    uint64_t one = 1;
    (void)!write(wake_, &one, sizeof one);
    thread_.join();
  }
  Json counters() const override { return counters_.to_json(); }
  std::string first_rejection() const override { return counters_.first_rejection(); }

 private:
  void loop() {
    zmq::pollitem_t items[3] = {{requests_.handle(), 0, ZMQ_POLLIN, 0},
                                {commands_.handle(), 0, ZMQ_POLLIN, 0},
                                {nullptr, wake_, ZMQ_POLLIN, 0}};
    Frames frames;
    while (!stopping_.load(std::memory_order_relaxed)) {
      zmq::poll(items, 3, std::chrono::milliseconds(-1));
      // A bounded batch per endpoint, so neither starves the other.
      for (int i = 0; i < 256 && (items[0].revents & ZMQ_POLLIN) && receive(requests_, &frames); ++i) {
        on_request(frames);
      }
      for (int i = 0; i < 256 && (items[1].revents & ZMQ_POLLIN) && receive(commands_, &frames); ++i) {
        on_command(frames);
      }
    }
  }

  // Sends a reply, waiting while the client's queue is at its high-water mark (as a blocking
  // zmq_send would with ROUTER_MANDATORY, but SHUTDOWN still ends the wait). "" when sent.
  std::string send_to(const std::string& rid, const Frames& frames) {
    zmq::pollitem_t items[2] = {{requests_.handle(), 0, ZMQ_POLLOUT, 0}, {nullptr, wake_, ZMQ_POLLIN, 0}};
    for (bool writable = false;;) {
      std::string why = try_send_to(requests_, rid, frames);
      if (why != "EAGAIN") return why;
      if (stopping_.load(std::memory_order_relaxed)) return "the server stopped while the client's queue was full";
      // POLLOUT says some client's pipe has room, not necessarily this one's: if it said so and the
      // send still failed, wait a little before the next try.
      if (writable) std::this_thread::sleep_for(std::chrono::microseconds(50));
      writable = zmq::poll(items, 2, std::chrono::milliseconds(100)) > 0 && (items[0].revents & ZMQ_POLLOUT);
    }
  }

  bool is_hello(const Frames& frames) const { return frames.size() == 2 && frames[1] == kZmqHello; }

  void on_request(Frames& frames) {
    std::string rid = frames[0];
    if (is_hello(frames)) {
      std::string why = send_to(rid, {kZmqHello, command_port_});
      if (!why.empty()) diag("the HELLO answer could not be sent: " + why);
      return;
    }
    frames.erase(frames.begin());
    std::optional<Frames> reply = handler_.request(frames);
    if (!reply) return;
    std::string why = send_to(rid, *reply);
    if (!why.empty()) {
      std::optional<uint64_t> id = decode_id((*reply)[0]);
      counters_.dropped("the reply to id " + std::to_string(id.value_or(0)) + " was dropped: " + why);
    }
  }

  void on_command(Frames& frames) {
    if (is_hello(frames)) return;  // counted nowhere, answered with nothing
    frames.erase(frames.begin());
    handler_.command(frames);
  }

  ServerCounters counters_;
  ZmqHandler handler_;
  zmq::context_t ctx_;
  zmq::socket_t requests_, commands_;
  std::string command_port_;
  std::string address_;
  int wake_ = -1;
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

}  // namespace

std::unique_ptr<ServerStack> serve_zmq(const ServerArgs& args) {
  return std::make_unique<ZmqServer>(args);
}

}  // namespace rpcarena
