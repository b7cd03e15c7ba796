#pragma once

#include "args.h"

namespace rpcarena {

// The client role; returns the exit code of a failure (throws Failure); after `stopped` it exits 0
// itself, without unwinding.
int run_client(const ClientArgs& args);
// The server role.
int run_server(const ServerArgs& args);
// The capabilities event.
int run_capabilities();

}  // namespace rpcarena
