#pragma once

#include "args.h"

namespace rpcarena {

// Thrown to leave the process at once with `code` after the events are printed.
struct ExitNow {
  int code;
};

// The client role; returns the exit code (throws Failure or ExitNow).
int run_client(const ClientArgs& args);
// The server role.
int run_server(const ServerArgs& args);
// The capabilities event.
int run_capabilities();

}  // namespace rpcarena
