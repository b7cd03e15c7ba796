#include "stacks.h"
namespace rpcarena {
std::unique_ptr<ClosableStack> connect_quic(const ClientArgs&, Wakeup&, const std::function<bool()>&) {
  throw Failure(phase::kConnect, code::kInternal, "quic: work in progress");
}
}  // namespace rpcarena
