// The server lifecycle (docs/peer-protocol.md "Lifecycle", server table): load the certificate
// and key, bind --listen, `ready`, serve until SHUTDOWN or end of stdin (answering WINDOW START and
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
  uint64_t rpcs = 0, requests = 0, responses = 0, rejected = 0;
  for (const Slot& s : slots_) {
    rpcs += s.rpcs.load(std::memory_order_relaxed);
    requests += s.requests.load(std::memory_order_relaxed);
    responses += s.responses.load(std::memory_order_relaxed);
    rejected += s.rejected.load(std::memory_order_relaxed);
  }
  return Json{{"rpcs", counter(rpcs)},
              {"requests", counter(requests)},
              {"responses", counter(responses)},
              {"rejected", counter(rejected)}};
}

int run_server(const ServerArgs& args) {
  std::unique_ptr<ServerStack> server =
      args.stack == Stack::kGrpc ? serve_grpc(args) : serve_quic(args);
  emit("ready", Json{{"role", "server"}, {"address", server->address()}, {"pid", getpid()}});

  Wakeup wakeup;
  Commands commands(wakeup);
  commands.start();
  Input in = commands.wait();
  // 1.2: each window command is answered at once with the counters so far; any number, any order.
  for (const char* edge; (edge = window_edge(in.kind)) != nullptr; in = commands.wait()) {
    emit("window", Json{{"edge", edge}, {"counters", server->counters()}});
  }
  if (in.kind == Input::Kind::kShutdown) {
    server->stop();
    emit("stopped", Json{{"counters", server->counters()}});
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
