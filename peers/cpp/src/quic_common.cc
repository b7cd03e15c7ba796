#include "quic_common.h"

namespace rpcarena {

std::vector<std::string> quic_deviations() { return {}; }

}  // namespace rpcarena
