// The grpc-cq stack: its completion-queue pump, and its client and synchronous server over
// loopback h2c (--tls off) in this process, running every load model on both shapes, against its
// own server and against the callback-API grpc server (the same wire), with the validation and
// conformance-fault paths.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "clock.h"
#include "engine.h"
#include "grpc_cq_pump.h"
#include "grpc_tuning.h"
#include "rpcarena/bench/v1/bench.grpc.pb.h"
#include "stacks.h"
#include "workload.h"

using namespace rpcarena;

namespace {

// Waits until `done` (a flag set on the pump thread) or 5 s.
bool eventually(const std::atomic<bool>& done) {
  int64_t until = now_ns() + 5 * int64_t{1000000000};
  while (!done.load() && now_ns() < until) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return done.load();
}

}  // namespace

TEST(CqPump, RunsPostsOnItsThreadInOrder) {
  CqPump pump;
  std::vector<int> seen;
  std::atomic<bool> done{false};
  bool all_on_pump = true;
  for (int i = 0; i < 1000; ++i) {
    pump.post([&, i] {
      all_on_pump = all_on_pump && pump.on_pump_thread();
      seen.push_back(i);
      if (i == 999) done.store(true);
    });
  }
  ASSERT_TRUE(eventually(done));
  EXPECT_TRUE(all_on_pump);
  ASSERT_EQ(seen.size(), 1000u);
  for (int i = 0; i < 1000; ++i) EXPECT_EQ(seen[i], i);
  EXPECT_FALSE(pump.on_pump_thread());
}

TEST(CqPump, GivesOneCreditPerTurnAndPollsAfterASubmit) {
  CqPump pump;
  std::atomic<int> taken{0}, refused{0};
  std::atomic<bool> done{false};
  pump.post([&] {
    pump.set_turn_hook([&] {
      if (taken.load() >= 100) {
        done.store(true);
        return;
      }
      if (pump.take_credit()) ++taken;
      if (pump.take_credit()) ++taken;  // a second submit in the same turn is refused
      else ++refused;
    });
  });
  // 100 turns that each took their credit must not wait 50 ms each: the pump polls after them.
  int64_t began = now_ns();
  ASSERT_TRUE(eventually(done));
  EXPECT_EQ(taken.load(), 100);
  EXPECT_EQ(refused.load(), 100);
  EXPECT_LT(now_ns() - began, 2 * int64_t{1000000000});
  pump.post([&] { pump.set_turn_hook(nullptr); });
}

TEST(CqPump, CpuClockIsThePumpThreads) {
  CqPump pump;
  int64_t before = pump.cpu_ns();
  std::atomic<bool> done{false};
  pump.post([&] {
    // 20 ms of CPU on the pump thread, by its own clock (wall time varies with the machine's load)
    timespec ts{};
    auto own = [&ts] {
      clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
      return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
    };
    int64_t until = own() + 20000000;
    while (own() < until) {
    }
    done.store(true);
  });
  ASSERT_TRUE(eventually(done));
  int64_t spent = pump.cpu_ns() - before;
  EXPECT_GE(spent, 20000000);
  std::this_thread::sleep_for(std::chrono::milliseconds(30));  // the main thread's sleep: not counted
  EXPECT_LT(pump.cpu_ns() - before, spent + 10000000);
}

namespace {

ClientArgs client_args(const std::string& address, Shape shape, Load load) {
  ClientArgs a;
  a.stack = Stack::kGrpcCq;
  a.server = parse_host_port("--server", address);
  a.tls = false;
  a.shape = shape;
  a.load = load;
  a.concurrency = 4;
  a.in_flight = 6;
  a.max_in_flight = 8;
  a.streams = 3;
  a.settle_ms = 2000;
  a.rate = 2000;
  a.request_size = 64;
  a.response_size = shape == Shape::kSend ? 0 : 32;
  a.drain_ms = 2000;
  return a;
}

PhaseResult run(ClientStack& stack, const ClientArgs& a, int64_t window_ns = 200000000) {
  Wakeup wakeup;
  PhaseSpec spec;
  spec.t0 = now_ns();
  spec.window_ns = window_ns;
  spec.bound_ns = 2000000000;
  spec.measure = true;
  return run_phase(stack, a, spec, wakeup, [] { return false; });
}

OpResult single(ClientStack& stack) {
  Wakeup wakeup;
  bool abandoned = false;
  return run_single(stack, 5 * int64_t{1000000000}, wakeup, [] { return false; }, &abandoned);
}

uint64_t server_count(const ServerStack& server, const char* key) {
  return std::stoull(server.counters().at(key).get<std::string>());
}

// Clients and servers are never destroyed, as in the peer (which exits without unwinding): the
// socket mutator of grpc_tuning.cc is one static object whose reference every channel and server
// takes over, so destroying a second one trips gRPC's refcount assertion.
ClosableStack* connect(const ClientArgs& a) {
  Wakeup wakeup;
  ClosableStack* stack = connect_grpc_cq(a, wakeup, [] { return false; }).release();
  EXPECT_NE(stack, nullptr);
  return stack;
}
ServerStack* serve(Stack stack, const std::string& fault = "") {
  ServerArgs s;
  s.stack = stack;
  s.listen = parse_host_port("--listen", "127.0.0.1:0");
  s.tls = false;
  s.conformance_fault = fault;
  return (stack == Stack::kGrpc ? serve_grpc(s) : serve_grpc_cq(s)).release();
}

// Every count of docs/peer-protocol.md "sample" for `shape`, and the submitter's CPU.
void expect_sample(const PhaseResult& r, const ClientArgs& a, const std::string& what) {
  const Totals& t = r.totals;
  EXPECT_FALSE(r.timed_out) << what;
  EXPECT_EQ(t.failed, 0u) << what << ": " << t.first_failure;
  EXPECT_GT(t.completed, 0u) << what;
  EXPECT_EQ(static_cast<uint64_t>(t.histogram.count()), t.completed) << what;
  EXPECT_EQ(t.requests, t.completed) << what;
  EXPECT_EQ(t.responses, t.completed) << what;  // send: the acknowledgements read
  EXPECT_EQ(t.request_bytes, t.completed * a.request_size) << what;
  EXPECT_EQ(t.response_bytes, t.completed * a.response_size) << what;
  EXPECT_GT(r.submit_cpu_ns, 0) << what;
  EXPECT_LE(r.submit_cpu_ns, 2 * (200000000 + r.drain_ns)) << what;
}

}  // namespace

TEST(GrpcCq, EveryLoadModelOnBothShapesAgainstItsServer) {
  auto server = serve(Stack::kGrpcCq);
  for (Shape shape : {Shape::kUnary, Shape::kSend}) {
    for (Load load : {Load::kClosed, Load::kWindow, Load::kBackpressure, Load::kOpen,
                      Load::kSendSaturation}) {
      if (load == Load::kSendSaturation && shape != Shape::kSend) continue;
      ClientArgs a = client_args(server->address(), shape, load);
      auto stack = connect(a);
      ASSERT_NE(stack, nullptr);
      uint64_t rpcs = server_count(*server, "rpcs");
      uint64_t commands = server_count(*server, "commands");
      PhaseResult r = run(*stack, a);
      std::string what = std::string(name(shape)) + " " + name(load);
      expect_sample(r, a, what);
      // The server served every completed call (and counted each command) by the time it ended.
      EXPECT_EQ(server_count(*server, "rpcs") - rpcs, r.totals.completed) << what;
      EXPECT_EQ(server_count(*server, "commands") - commands,
                shape == Shape::kSend ? r.totals.completed : 0u)
          << what;
      if (load == Load::kWindow) {
        EXPECT_EQ(r.max_in_flight, 6u) << what;
      } else if (load == Load::kBackpressure) {
        EXPECT_LE(r.max_in_flight, 8u) << what;
      } else if (load == Load::kOpen) {
        EXPECT_LE(r.totals.completed, r.offered) << what;
      } else if (load == Load::kSendSaturation) {
        EXPECT_EQ(r.max_in_flight, 3u) << what;
      }
    }
  }
  EXPECT_EQ(server_count(*server, "rejected"), 0u);
  EXPECT_EQ(server->first_rejection(), "");
  server->stop();
}

TEST(GrpcCq, ClientInteroperatesWithTheCallbackGrpcServer) {
  auto server = serve(Stack::kGrpc);
  for (Shape shape : {Shape::kUnary, Shape::kSend}) {
    ClientArgs a = client_args(server->address(), shape, Load::kClosed);
    a.payload = PayloadKind::kStructured;
    auto stack = connect(a);
    ASSERT_NE(stack, nullptr);
    expect_sample(run(*stack, a), a, name(shape));
  }
  server->stop();
}

TEST(GrpcCq, ServerRejectsAMalformedCommandAndSaysWhy) {
  auto server = serve(Stack::kGrpcCq);
  auto channel = grpc::CreateChannel(server->address(), grpc::InsecureChannelCredentials());
  auto stub = pb::BenchService::NewStub(channel);
  pb::Request request;
  request.set_seq(7);
  request.set_response_size(5);  // a command asks for no response
  pb::Empty empty;
  grpc::ClientContext ctx;
  grpc::Status s = stub->Command(&ctx, request, &empty);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
  EXPECT_EQ(server_count(*server, "rejected"), 1u);
  EXPECT_EQ(server_count(*server, "commands"), 0u);
  EXPECT_NE(server->first_rejection().find("request 7"), std::string::npos) << server->first_rejection();
  // The stream methods are not offered: the generated default answers UNIMPLEMENTED.
  grpc::ClientContext ctx2;
  auto reader = stub->ServerStream(&ctx2, request);
  pb::Response response;
  while (reader->Read(&response)) {
  }
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::UNIMPLEMENTED);
  server->stop();
}

TEST(GrpcCq, ConformanceFaultsInBothRoles) {
  // A server fault fails the client's validation operation with the documented code.
  for (auto [fault, code] : std::vector<std::pair<std::string, std::string>>{
           {"wrong-seq", "invalid"}, {"short-payload", "invalid"}, {"missing-message", "invalid"},
           {"extra-message", "invalid"}, {"error-status", "rpc"}}) {
    auto server = serve(Stack::kGrpcCq, fault);
    ClientArgs a = client_args(server->address(), Shape::kUnary, Load::kClosed);
    auto stack = connect(a);
    ASSERT_NE(stack, nullptr);
    OpResult r = single(*stack);
    EXPECT_FALSE(r.ok) << fault;
    EXPECT_EQ(r.code, code) << fault << ": " << r.message;
    server->stop();
  }
  // A client fault's malformed call passes only when the server refuses it; then a good one.
  for (Shape shape : {Shape::kUnary, Shape::kSend}) {
    auto server = serve(Stack::kGrpcCq);
    ClientArgs a = client_args(server->address(), shape, Load::kClosed);
    a.conformance_fault = "nonzero-byte";
    auto stack = connect(a);
    ASSERT_NE(stack, nullptr);
    OpResult malformed = single(*stack);
    EXPECT_TRUE(malformed.ok) << malformed.message;
    OpResult good = single(*stack);
    EXPECT_TRUE(good.ok) << good.message;
    EXPECT_EQ(server_count(*server, "rejected"), 1u);
    EXPECT_NE(server->first_rejection(), "");
    server->stop();
  }
  // ... and fails when the server skips its validation.
  auto lax = serve(Stack::kGrpcCq, "skip-validation");
  ClientArgs a = client_args(lax->address(), Shape::kSend, Load::kClosed);
  a.conformance_fault = "nonzero-byte";
  auto stack = connect(a);
  ASSERT_NE(stack, nullptr);
  OpResult r = single(*stack);
  EXPECT_EQ(r.code, "invalid") << r.message;
  lax->stop();
}

// The synchronous server's pool runs a thread per call in progress; more threads than the
// per-thread slots must still count (they share an extra slot) instead of aborting the server.
TEST(GrpcCq, ServerCountersOutliveTheThreadSlots) {
  ServerCounters counters;
  const int n = kMaxThreads + 100;
  std::atomic<int> counted{0};
  std::atomic<bool> release{false};
  std::vector<std::thread> threads;
  for (int i = 0; i < n; ++i) {
    threads.emplace_back([&] {
      counters.rpc();
      ++counted;
      while (!release.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    });
  }
  while (counted.load() < n) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  release.store(true);
  for (auto& t : threads) t.join();
  EXPECT_EQ(counters.to_json()["rpcs"], std::to_string(n));
}
