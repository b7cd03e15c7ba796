// The control channel: which line is which command (the window commands are 1.2's), the edge a
// window event names, the counters a server's `window` and `stopped` events carry, and what
// `capabilities` declares for 1.2.
#include <gtest/gtest.h>

#include <algorithm>
#include <thread>
#include <vector>

#include "client.h"
#include "commands.h"
#include "stacks.h"

using namespace rpcarena;

TEST(Commands, LinesAreClassifiedAfterTrimming) {
  EXPECT_EQ(classify_line("START").kind, Input::Kind::kStart);
  EXPECT_EQ(classify_line(" \tSHUTDOWN \r").kind, Input::Kind::kShutdown);
  EXPECT_EQ(classify_line("WINDOW START").kind, Input::Kind::kWindowStart);
  EXPECT_EQ(classify_line("  WINDOW END\r").kind, Input::Kind::kWindowEnd);
  EXPECT_EQ(classify_line("WINDOW START\r").line, "WINDOW START\r");  // kept as received
}

TEST(Commands, NearMissesAreUnknown) {
  // one space between the words, upper case, nothing else on the line
  for (const char* line : {"WINDOW  START", "WINDOW\tEND", "window start", "WINDOW", "WINDOW STARTED",
                           "WINDOW START END", "START NOW", ""}) {
    EXPECT_EQ(classify_line(line).kind, Input::Kind::kUnknown) << line;
  }
}

TEST(Commands, WindowCommandsNameTheirEdge) {
  EXPECT_STREQ(window_edge(Input::Kind::kWindowStart), "start");
  EXPECT_STREQ(window_edge(Input::Kind::kWindowEnd), "end");
  EXPECT_EQ(window_edge(Input::Kind::kStart), nullptr);
  EXPECT_EQ(window_edge(Input::Kind::kShutdown), nullptr);
  EXPECT_EQ(window_edge(Input::Kind::kUnknown), nullptr);
}

// What the server's threads counted, summed whenever an event asks (each thread has its own slot).
TEST(Commands, CountersAreSummedOverThreadsWhenAsked) {
  ServerCounters counters;
  EXPECT_EQ(counters.to_json().dump(),
            R"({"rpcs":"0","requests":"0","responses":"0","rejected":"0","commands":"0"})");
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([&counters] {
      for (int i = 0; i < 1000; ++i) {
        counters.rpc();
        counters.request();
        counters.request();
        counters.response();
      }
      counters.rejected();
      counters.command();
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(counters.to_json().dump(),
            R"({"rpcs":"3000","requests":"6000","responses":"3000","rejected":"3","commands":"3"})");
  EXPECT_EQ(counters.first_rejection(), "");  // no reason was given
}

// 1.3: the first reason is kept (on one line) whether it came with a rejection or a drop; zmq's
// counters add `dropped`.
TEST(Commands, TheFirstRejectionIsKept) {
  ServerCounters counters(true);
  counters.dropped("the reply to id 7 was dropped:\nEAGAIN");
  counters.rejected("request 1: seq 2");
  EXPECT_EQ(counters.first_rejection(), "the reply to id 7 was dropped: EAGAIN");
  EXPECT_EQ(counters.to_json()["dropped"], "1");
  EXPECT_EQ(counters.to_json()["rejected"], "1");
}

// Revision 1.5 (perf as the profiler), no allocation counters declared, pingpong served (not driven) on the stacks with
// streams; tls, not_offered and conformance_faults as docs/stacks.md says for grpc, quic and zmq;
// no `dated` payload and no client_modes (official only) on any stack.
TEST(Commands, CapabilitiesDeclareRevision15) {
  testing::internal::CaptureStdout();
  ASSERT_EQ(run_capabilities(), 0);
  Json caps = Json::parse(testing::internal::GetCapturedStdout());
  EXPECT_EQ(caps["revision"], "1.5");
  EXPECT_EQ(caps["profiler"], "perf");
  EXPECT_FALSE(caps.contains("allocations"));
  auto has = [](const Json& list, const char* what) {
    return std::find(list.begin(), list.end(), Json(what)) != list.end();
  };
  for (const char* role : {"client", "server"}) {
    ASSERT_EQ(caps["roles"][role].size(), 4u);
    const Json& grpc = caps["roles"][role][0];
    const Json& quic = caps["roles"][role][1];
    const Json& zmq = caps["roles"][role][2];
    EXPECT_EQ(grpc["stack"], "grpc");
    EXPECT_EQ(grpc["tls"], Json::array({"on", "off"}));
    EXPECT_TRUE(has(grpc["shapes"], "send"));
    EXPECT_EQ(quic["tls"], Json::array({"on"}));
    EXPECT_FALSE(has(quic["shapes"], "send"));
    EXPECT_TRUE(quic["not_offered"].contains("send"));
    EXPECT_EQ(zmq["stack"], "zmq");
    EXPECT_EQ(zmq["tls"], Json::array({"off"}));
    EXPECT_EQ(zmq["shapes"], Json::array({"unary", "send"}));
    EXPECT_TRUE(zmq["not_offered"].contains("bidi"));
    EXPECT_EQ(zmq["conformance_faults"], true);
    EXPECT_EQ(zmq["settings"]["sndhwm"], 1000);
    EXPECT_EQ(zmq["libraries"]["cppzmq"], "4.9.0");
    bool server = std::string(role) == "server";
    EXPECT_EQ(has(grpc["shapes"], "pingpong"), server);
    EXPECT_EQ(has(quic["shapes"], "pingpong"), server);
    EXPECT_FALSE(has(zmq["shapes"], "pingpong"));
    // grpc-cq: grpc's wire, settings and TLS values; the reference's two RPCs; faults both roles.
    const Json& cq = caps["roles"][role][3];
    EXPECT_EQ(cq["stack"], "grpc-cq");
    EXPECT_EQ(cq["tls"], Json::array({"on", "off"}));
    EXPECT_EQ(cq["shapes"], Json::array({"unary", "send"}));
    for (const char* shape : {"client_stream", "server_stream", "bidi"}) {
      EXPECT_TRUE(cq["not_offered"].contains(shape)) << shape;
    }
    EXPECT_EQ(cq["not_offered"].contains("pingpong"), server);
    EXPECT_EQ(cq["conformance_faults"], true);
    EXPECT_EQ(cq["settings"]["stream_window"], grpc["settings"]["stream_window"]);
    EXPECT_EQ(cq["settings"]["max_message_bytes"], grpc["settings"]["max_message_bytes"]);
    EXPECT_NE(cq["settings"]["runtime"], grpc["settings"]["runtime"]);
    EXPECT_EQ(cq["load_models"].size(), server ? 0u : 5u);
    for (const Json& entry : caps["roles"][role]) {
      EXPECT_EQ(entry["payloads"], Json::array({"zeros", "structured"})) << entry["stack"];
      EXPECT_FALSE(entry.contains("client_modes")) << entry["stack"];
    }
  }
}
