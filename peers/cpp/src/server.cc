// The server lifecycle (docs/peer-protocol.md "Lifecycle", server table): load the certificate
// and key (--tls on), bind --listen, `ready`, serve until SHUTDOWN or end of stdin (answering WINDOW START and
// WINDOW END with a `window` event each), `stopped` with counters.
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "client.h"
#include "commands.h"
#include "stacks.h"

namespace rpcarena {

std::string read_file(const std::string& what, const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Failure(phase::kStartup, code::kConfig, what + " " + path + " cannot be read");
  std::stringstream s;
  s << f.rdbuf();
  if (!f && !f.eof()) throw Failure(phase::kStartup, code::kConfig, what + " " + path + " cannot be read");
  return s.str();
}

Json ServerCounters::to_json() const {
  uint64_t rpcs = 0, requests = 0, responses = 0, rejected = 0, commands = 0, dropped = 0;
  for (const Slot& s : slots_) {
    rpcs += s.rpcs.load(std::memory_order_relaxed);
    requests += s.requests.load(std::memory_order_relaxed);
    responses += s.responses.load(std::memory_order_relaxed);
    rejected += s.rejected.load(std::memory_order_relaxed);
    commands += s.commands.load(std::memory_order_relaxed);
    dropped += s.dropped.load(std::memory_order_relaxed);
  }
  Json out{{"rpcs", counter(rpcs)},
           {"requests", counter(requests)},
           {"responses", counter(responses)},
           {"rejected", counter(rejected)},
           {"commands", counter(commands)}};
  if (with_dropped_) out["dropped"] = counter(dropped);
  return out;
}

void ServerCounters::note_first(const std::string& why) {
  if (have_first_.load(std::memory_order_acquire)) return;
  std::lock_guard<std::mutex> lock(first_mutex_);
  if (first_.empty()) first_ = one_line(why);
  have_first_.store(true, std::memory_order_release);
}

std::string ServerCounters::first_rejection() const {
  if (!have_first_.load(std::memory_order_acquire)) return "";
  std::lock_guard<std::mutex> lock(first_mutex_);
  return first_;
}

namespace {
std::unique_ptr<ServerStack> serve(const ServerArgs& args) {
  switch (args.stack) {
    case Stack::kGrpc: return serve_grpc(args);
    case Stack::kQuic: return serve_quic(args);
    case Stack::kZmq: return serve_zmq(args);
    case Stack::kGrpcCq: return serve_grpc_cq(args);
  }
  throw Failure(phase::kStartup, code::kInternal, "unknown stack");
}

// The fields of `window` and `stopped`: the counters and (1.3) the first rejection, once there is one.
Json counter_fields(const ServerStack& server) {
  Json out{{"counters", server.counters()}};
  std::string first = server.first_rejection();
  if (!first.empty()) out["first_rejection"] = first;
  return out;
}
}  // namespace

int run_server(const ServerArgs& args) {
  std::unique_ptr<ServerStack> server = serve(args);
  emit("ready", Json{{"role", "server"}, {"address", server->address()}, {"pid", getpid()}});

  // Never destroyed, as in run_client: stdin's detached reader keeps using both.
  Wakeup& wakeup = *new Wakeup;
  Commands& commands = *new Commands(wakeup);
  commands.start();
  Input in = commands.wait();
  // 1.2: each window command is answered at once with the counters so far; any number, any order.
  for (const char* edge; (edge = window_edge(in.kind)) != nullptr; in = commands.wait()) {
    Json fields{{"edge", edge}};
    fields.update(counter_fields(*server));
    emit("window", fields);
  }
  if (in.kind == Input::Kind::kShutdown) {
    server->stop();
    emit("stopped", counter_fields(*server));
    // Exit 0 at once, without unwinding, as the client does after `stopped`: tearing the stack
    // down (ngtcp2's connections, gRPC's server and their threads) gains nothing once the
    // counters are out, and that teardown crashed once in 48 cpp-quic samples on the regional
    // WAN (SIGSEGV after `stopped`, campaigns/six-languages.toml, 2026-12-01).
    std::fflush(stdout);
    std::fflush(stderr);
    _exit(0);
  }
  // A protocol error ends the process right after the error event: the server's threads are
  // left to the exit rather than joined here.
  server.release();
  if (in.kind == Input::Kind::kStart) {
    throw Failure(phase::kServe, code::kProtocol,
                  "START is a client command; a server takes SHUTDOWN, WINDOW START or WINDOW END");
  }
  throw Failure(phase::kServe, code::kProtocol,
                "unknown command \"" + one_line(in.line) +
                    "\"; a server takes SHUTDOWN, WINDOW START or WINDOW END");
}

}  // namespace rpcarena
