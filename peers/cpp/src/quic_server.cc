#include "stacks.h"
namespace rpcarena {
std::unique_ptr<ServerStack> serve_quic(const ServerArgs&) {
  throw Failure(phase::kListen, code::kInternal, "quic: work in progress");
}
}  // namespace rpcarena
