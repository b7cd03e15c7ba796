// rpcarena-peer-cpp: the C++ peer of rpcarena (docs/peer-protocol.md, revision 1.4).
#include <cstdio>
#include <string>
#include <vector>

#include <unistd.h>

#include "args.h"
#include "client.h"
#include "events.h"

using namespace rpcarena;

namespace {
// Leaves without running destructors: gRPC's and the QUIC loop's threads may still be running,
// and every event has been flushed already.
[[noreturn]] void leave(int code) {
  std::fflush(stdout);
  std::fflush(stderr);
  _exit(code);
}
}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  try {
    Command command = parse_args(args);
    switch (command.kind) {
      case Command::Kind::kCapabilities: leave(run_capabilities());
      case Command::Kind::kServer: leave(run_server(command.server));
      case Command::Kind::kClient: leave(run_client(command.client));
    }
  } catch (const ArgError& e) {
    leave(emit_failure(Failure(phase::kStartup, code::kConfig, e.what())));
  } catch (const Failure& f) {
    leave(emit_failure(f));
  } catch (const std::exception& e) {
    leave(emit_failure(Failure(phase::kStartup, code::kInternal, e.what())));
  }
  leave(1);
}
