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
            R"({"rpcs":"0","requests":"0","responses":"0","rejected":"0"})");
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
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(counters.to_json().dump(),
            R"({"rpcs":"3000","requests":"6000","responses":"3000","rejected":"3"})");
}

// Revision 1.2, no allocation counters declared, pingpong served on both stacks and not driven.
TEST(Commands, CapabilitiesDeclareRevision12) {
  testing::internal::CaptureStdout();
  ASSERT_EQ(run_capabilities(), 0);
  Json caps = Json::parse(testing::internal::GetCapturedStdout());
  EXPECT_EQ(caps["revision"], "1.2");
  EXPECT_FALSE(caps.contains("allocations"));
  Json pingpong = "pingpong";
  for (const Json& entry : caps["roles"]["server"]) {
    const Json& shapes = entry["shapes"];
    EXPECT_NE(std::find(shapes.begin(), shapes.end(), pingpong), shapes.end()) << entry["stack"];
    EXPECT_NE(std::find(shapes.begin(), shapes.end(), Json("bidi")), shapes.end()) << entry["stack"];
  }
  for (const Json& entry : caps["roles"]["client"]) {
    const Json& shapes = entry["shapes"];
    EXPECT_EQ(std::find(shapes.begin(), shapes.end(), pingpong), shapes.end()) << entry["stack"];
  }
  EXPECT_EQ(caps["roles"]["server"].size(), 2u);
}
