// The client lifecycle (docs/peer-protocol.md "Lifecycle", client table): connect, validate one
// operation, warm up, `armed`, START, the window and its drain, `sample`, SHUTDOWN.
#include "client.h"

#include <array>
#include <cmath>
#include <cstdio>
#include <functional>

#include <unistd.h>

#include "clock.h"
#include "commands.h"
#include "net.h"
#include "stacks.h"

namespace rpcarena {

namespace {

constexpr int64_t kValidateBound = 120 * int64_t{1000000000};

// `stopped`, then exit 0 at once, without unwinding: the stack's destructors would tear down
// gRPC's channel while its threads may still run a call's last callback, and that teardown
// crashed once in 96 cpp-grpc samples on the regional WAN (SIGSEGV after `stopped`,
// campaigns/six-languages.toml). Every event is flushed first; the OS reclaims the rest.
[[noreturn]] void stop_now() {
  emit("stopped");
  std::fflush(stdout);
  std::fflush(stderr);
  _exit(0);
}

// A line arrived while the client was busy in `phase`: SHUTDOWN (or end of stdin) stops at once
// (exit 0 after `stopped`); START and unknown lines are protocol errors.
[[noreturn]] void interrupted(Commands& commands, const char* phase_name) {
  Input in = commands.wait();
  if (in.kind == Input::Kind::kShutdown) {
    diag(std::string("SHUTDOWN (or end of stdin) during ") + phase_name + "; stopping");
    stop_now();
  }
  if (in.kind == Input::Kind::kStart) {
    throw Failure(phase_name, code::kProtocol,
                  std::string("START arrived during ") + phase_name +
                      "; it is only valid once, after `armed`");
  }
  throw Failure(phase_name, code::kProtocol,
                "unknown command \"" + one_line(in.line) + "\" during " + phase_name +
                    "; expected START or SHUTDOWN");
}

Json sample_event(const ClientArgs& args, const PhaseResult& r, int64_t window_ns,
                  const std::optional<TransportStats>& transport) {
  const Totals& t = r.totals;
  Json s;
  s["completed"] = counter(t.completed);
  s["failed"] = counter(t.failed);
  s["requests"] = counter(t.requests);
  s["responses"] = counter(t.responses);
  s["request_bytes"] = counter(t.request_bytes);
  s["response_bytes"] = counter(t.response_bytes);
  s["window_ns"] = counter(static_cast<uint64_t>(window_ns));
  s["drain_ns"] = counter(static_cast<uint64_t>(r.drain_ns));
  s["histogram"] = t.histogram.encode();
  if (t.failed > 0) {
    Json failures = Json::object();
    for (const auto& [code, n] : t.failures) failures[code] = counter(n);
    s["failures"] = failures;
    s["first_failure"] = one_line(t.first_failure);
  }
  s["load"] = name(args.load);
  Json intervals = Json::array();
  for (size_t k = 0; k < t.intervals.size(); ++k) {
    intervals.push_back(Json{{"offset_ns", counter(uint64_t{k} * 1000000000)},
                             {"completed", counter(t.intervals[k].first)},
                             {"histogram", t.intervals[k].second}});
  }
  s["intervals"] = intervals;
  if (args.load != Load::kClosed) s["max_in_flight"] = counter(r.max_in_flight);
  if (args.load == Load::kOpen) {
    s["offered"] = counter(r.offered);
    s["target_rate"] = args.rate;
    bool behind = t.completed + t.failed < r.offered ||
                  (t.send_lag->count() > 0 && t.send_lag->value_at_percentile(99.0) > 1000000);
    s["fell_behind"] = behind;
    diag("open: " + std::to_string(r.offered) + " offered, send lag p50 " +
         std::to_string(t.send_lag->value_at_percentile(50.0) / 1000) + " us, p99 " +
         std::to_string(t.send_lag->value_at_percentile(99.0) / 1000) + " us");
    s["uncorrected_histogram"] = t.uncorrected->encode();
    s["send_lag_histogram"] = t.send_lag->encode();
  }
  if (args.load == Load::kSendSaturation && args.shape == Shape::kSend) {
    // 1.3: commands the transport accepted, completed or failed; only the server knows what
    // arrived, so no `received`.
    s["sent"] = counter(t.completed + t.failed);
  } else if (args.load == Load::kSendSaturation) {
    s["sent"] = counter(t.sent);
    s["received"] = counter(t.completed);
  }
  if (r.submit_cpu_ns >= 0) s["submit_cpu_ns"] = counter(static_cast<uint64_t>(r.submit_cpu_ns));
  if (transport) s["transport"] = transport->to_json();
  return s;
}

// startup: the CA must be readable and hold a certificate (config error, exit 2 otherwise).
void check_ca(const ClientArgs& args) {
  if (!args.tls) return;
  std::string ca = read_file("--ca", args.ca);
  try {
    check_certificates_pem(ca);
  } catch (const std::exception& e) {
    throw Failure(phase::kStartup, code::kConfig, "--ca " + args.ca + ": " + e.what());
  }
}

// What every phase of one client works with. A phase stops early when a line arrives on stdin
// (busy_stop) and then settles it with `interrupted`.
struct Client {
  const ClientArgs& args;
  Wakeup& wakeup;
  Commands& commands;
  std::function<bool()> busy_stop;
  ClosableStack* stack = nullptr;
};

// connect: returns how long it took.
int64_t connect_stack(Client& c) {
  int64_t began = now_ns();
  // Never destroyed: a failure below ends the process right after its error event, while the
  // stack's threads may still be running.
  switch (c.args.stack) {
    case Stack::kGrpc: c.stack = connect_grpc(c.args, c.wakeup, c.busy_stop).release(); break;
    case Stack::kQuic: c.stack = connect_quic(c.args, c.wakeup, c.busy_stop).release(); break;
    case Stack::kZmq: c.stack = connect_zmq(c.args, c.wakeup, c.busy_stop).release(); break;
    case Stack::kGrpcCq: c.stack = connect_grpc_cq(c.args, c.wakeup, c.busy_stop).release(); break;
  }
  if (!c.stack) interrupted(c.commands, phase::kConnect);
  return now_ns() - began;
}

// validate: one operation of the configured shape (send-saturation: a client stream of
// --messages-per-stream messages), checked as every measured one is.
void validate(Client& c) {
  bool abandoned = false;
  OpResult validated = run_single(*c.stack, kValidateBound, c.wakeup, c.busy_stop, &abandoned);
  if (abandoned) interrupted(c.commands, phase::kValidate);
  if (!validated.ok) {
    throw Failure(phase::kValidate, validated.code,
                  "the validation operation failed: " + validated.message);
  }
}

// What the warmup completed: in all and (1.3) per tenth of --warmup-ms.
struct Warmup {
  uint64_t completed = 0;
  std::array<uint64_t, kSegments> segments{};
};

// warmup: the configured model for --warmup-ms; every warmup operation then finishes within
// --drain-ms.
Warmup warm_up(Client& c) {
  if (c.args.warmup_ms == 0) return {};
  PhaseSpec spec;
  spec.t0 = now_ns();
  spec.window_ns = static_cast<int64_t>(c.args.warmup_ms) * 1000000;
  spec.bound_ns = static_cast<int64_t>(c.args.drain_ms) * 1000000;
  PhaseResult warm = run_phase(*c.stack, c.args, spec, c.wakeup, c.busy_stop);
  if (warm.abandoned) interrupted(c.commands, phase::kWarmup);
  if (warm.totals.failed > 0) {
    throw Failure(phase::kWarmup, warm.totals.first_code,
                  std::to_string(warm.totals.failed) +
                      " of the warmup operations failed; the first: " + warm.totals.first_failure);
  }
  return Warmup{warm.totals.completed, warm.totals.segments};
}

Json armed_event(Client& c, int64_t connect_ns, const Warmup& warmup) {
  Json segments = Json::array();
  for (uint64_t n : warmup.segments) segments.push_back(counter(n));
  return Json{{"lanes", c.args.lanes()},
              {"connections", c.stack->connections()},
              {"connect_ns", counter(static_cast<uint64_t>(connect_ns))},
              {"warmup_completed", counter(warmup.completed)},
              {"warmup_segments", segments}};
}

// armed: waits for START (SHUTDOWN stops at once).
void await_start(Client& c) {
  Input in = c.commands.wait();
  if (in.kind == Input::Kind::kShutdown) {
    c.stack->close();
    stop_now();
  }
  if (in.kind != Input::Kind::kStart) {  // window commands are a server's: unknown here
    throw Failure(phase::kArmed, code::kProtocol,
                  "unknown command \"" + one_line(in.line) + "\" while armed; expected START or SHUTDOWN");
  }
}

// measure: the window and its drain, then the `sample` event.
void measure(Client& c) {
  PhaseSpec spec;
  spec.t0 = now_ns();
  spec.window_ns = static_cast<int64_t>(c.args.window_ms) * 1000000;
  spec.bound_ns = static_cast<int64_t>(c.args.drain_ms) * 1000000;
  spec.measure = true;
  // The transport statistics: read at START, polled through the window, read after the drain.
  ClosableStack* stack = c.stack;
  std::optional<Poller> poller;
  if (!stack->transport().empty()) {
    poller.emplace(stack->transport(), [stack] { return stack->read_transport(); });
  }
  PhaseResult measured = run_phase(*stack, c.args, spec, c.wakeup, c.busy_stop);
  if (measured.abandoned) interrupted(c.commands, phase::kMeasure);
  std::optional<TransportStats> transport;
  if (poller) transport = poller->finish();
  emit("sample", sample_event(c.args, measured, spec.window_ns, transport));
}

// sampled: wait for SHUTDOWN; one sample per client.
void await_shutdown(Commands& commands) {
  for (;;) {
    Input next = commands.wait();
    if (next.kind == Input::Kind::kShutdown) return;
    if (next.kind == Input::Kind::kStart) {
      throw Failure(phase::kShutdown, code::kProtocol,
                    "a second START after the sample; a client reports one sample");
    }
    throw Failure(phase::kShutdown, code::kProtocol,
                  "unknown command \"" + one_line(next.line) + "\" after the sample; expected SHUTDOWN");
  }
}

}  // namespace

int run_client(const ClientArgs& args) {
  check_ca(args);
  // Never destroyed: stdin's reader thread is detached and keeps using both, and a Failure
  // thrown below unwinds this frame before main emits it. Destroyed here, a reader that met the
  // end of stdin during the unwinding locked a freed mutex and aborted (CI, server_window.sh:
  // grpc-cq's client given WINDOW START while armed, once in several runs).
  Wakeup& wakeup = *new Wakeup;
  Commands& commands = *new Commands(wakeup);
  commands.start();  // stdin is read from the moment the client starts connecting
  Client c{args, wakeup, commands, [&commands] { return commands.has_input(); }};

  int64_t connect_ns = connect_stack(c);
  validate(c);
  if (!args.conformance_fault.empty()) {
    // Conformance fault (zmq): that was the malformed call; a well-formed one must follow.
    validate(c);
    c.stack->close();
    stop_now();
  }
  Warmup warmup = warm_up(c);
  emit("armed", armed_event(c, connect_ns, warmup));
  await_start(c);
  measure(c);
  await_shutdown(commands);
  c.stack->close();
  stop_now();
}

}  // namespace rpcarena
