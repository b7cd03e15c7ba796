// The zmq stack (docs/stacks.md "zmq"): the frames' encoding, the server's parsing and validation
// of every message (a malformed one is counted in `rejected` and described with its frame sizes
// and first bytes), its conformance faults, the client's reading of replies, and a loopback sample
// of the real client against the real server.
#include <gtest/gtest.h>

#include "clock.h"
#include "engine.h"
#include "stacks.h"
#include "zmq_common.h"

using namespace rpcarena;

namespace {

std::string request(uint64_t seq, uint32_t size, uint32_t response_size) {
  pb::Request r;
  build_request(&r, PayloadKind::kZeros, seq, size, response_size, 0);
  return r.SerializeAsString();
}

Json counters_of(const ServerCounters& c) { return c.to_json(); }

}  // namespace

TEST(Zmq, IdsAreEightBytesBigEndian) {
  EXPECT_EQ(encode_id(1), std::string("\0\0\0\0\0\0\0\1", 8));
  EXPECT_EQ(decode_id(encode_id(0x0102030405060708)), 0x0102030405060708u);
  EXPECT_FALSE(decode_id("1234567").has_value());
  // The documented unary call: client [00..01] [08 01]
  EXPECT_EQ(request(1, 0, 0), std::string("\x08\x01", 2));
  EXPECT_EQ(describe_frames({encode_id(1), std::string("\x08\x01", 2)}),
            "2 frames of 8, 2 bytes: [00 00 00 00 00 00 00 01] [08 01]");
  EXPECT_EQ(describe_frames({std::string(20, 'A')}),
            "1 frame of 20 bytes: [41 41 41 41 41 41 41 41 41 41 41 41 41 41 41 41 ...]");
}

TEST(Zmq, AValidRequestIsAnsweredWithStatusOkAndItsResponse) {
  ServerCounters counters(true);
  ZmqHandler handler(counters, "");
  std::optional<Frames> reply = handler.request({encode_id(9), request(5, 16, 4)});
  ASSERT_TRUE(reply.has_value());
  ASSERT_EQ(reply->size(), 3u);
  EXPECT_EQ((*reply)[0], encode_id(9));
  EXPECT_EQ((*reply)[1], "");  // Status code 0 encodes to the empty frame
  ZmqReply parsed = parse_reply(*reply);
  EXPECT_EQ(parsed.error, "");
  EXPECT_EQ(parsed.response.seq(), 5u);
  EXPECT_EQ(check_response(parsed.response, PayloadKind::kZeros, 5, 4), "");
  EXPECT_EQ(counters_of(counters)["responses"], "1");
  EXPECT_EQ(counters_of(counters)["rejected"], "0");
  EXPECT_EQ(counters.first_rejection(), "");
}

TEST(Zmq, MalformedMessagesAreCountedAndDescribed) {
  ServerCounters counters(true);
  ZmqHandler handler(counters, "");
  // One frame: no id to answer.
  EXPECT_FALSE(handler.request({"HELLO!!"}).has_value());
  EXPECT_EQ(counters.first_rejection(),
            "unparsable message on the request endpoint (a message of 1 frames, expected 2 "
            "([id][Request])): 1 frame of 7 bytes: [48 45 4c 4c 4f 21 21]");
  // A 7-byte id: unreadable, not answered.
  EXPECT_FALSE(handler.request({"1234567", request(0, 0, 0)}).has_value());
  // A body that does not decode: answered with status 3, the id readable.
  std::optional<Frames> reply = handler.request({encode_id(3), "\xff\xff\xff"});
  ASSERT_TRUE(reply.has_value());
  ZmqReply parsed = parse_reply(*reply);
  EXPECT_EQ(parsed.status, 3u);
  EXPECT_NE(parsed.status_message.find("3 bytes: [00 00 00 00 00 00 00 03] [ff ff ff]"), std::string::npos);
  // A well-framed request that fails validation: status 3 with the reason.
  pb::Request bad;
  build_request(&bad, PayloadKind::kZeros, 4, 8, 0, 0);
  (*bad.mutable_payload())[7] = 1;
  parsed = parse_reply(*handler.request({encode_id(4), bad.SerializeAsString()}));
  EXPECT_EQ(parsed.status, 3u);
  EXPECT_EQ(parsed.status_message, "request 4: payload byte 7 is 0x01, expected zero");
  EXPECT_EQ(counters_of(counters)["rejected"], "4");
  EXPECT_EQ(counters_of(counters)["requests"], "4");
  EXPECT_EQ(counters_of(counters)["responses"], "0");
}

TEST(Zmq, CommandsAreValidatedAndCountedWithoutAnAnswer) {
  ServerCounters counters(true);
  ZmqHandler handler(counters, "");
  handler.command({encode_id(1), request(1, 32, 0)});
  handler.command({encode_id(2), request(2, 32, 64)});  // a command carries response_size 0
  handler.command({encode_id(3)});
  Json c = counters_of(counters);
  EXPECT_EQ(c["commands"], "1");
  EXPECT_EQ(c["rejected"], "2");
  EXPECT_EQ(c["dropped"], "0");
  EXPECT_EQ(counters.first_rejection(),
            "command endpoint: request 2: response_size 64 in a one-way command; a command carries response_size 0");
}

TEST(Zmq, ServerFaultsShapeTheReply) {
  ServerCounters counters(true);
  Frames call{encode_id(1), request(7, 8, 8)};
  Frames extra = *ZmqHandler(counters, "extra-message").request(call);
  EXPECT_EQ(extra.size(), 4u);
  EXPECT_EQ(parse_reply(extra).error.rfind("a reply of 4 frames", 0), 0u);
  Frames missing = *ZmqHandler(counters, "missing-message").request(call);
  EXPECT_EQ(missing, (Frames{encode_id(1), "", ""}));
  ZmqReply wrong = parse_reply(*ZmqHandler(counters, "wrong-seq").request(call));
  EXPECT_EQ(wrong.response.seq(), 8u);
  EXPECT_EQ(parse_reply(*ZmqHandler(counters, "error-status").request(call)).status, 13u);
  ZmqReply nonzero = parse_reply(*ZmqHandler(counters, "nonzero-byte").request(call));
  EXPECT_NE(check_response(nonzero.response, PayloadKind::kZeros, 7, 8), "");
  // skip-validation answers a malformed request as if it were fine
  pb::Request bad;
  build_request(&bad, PayloadKind::kZeros, 7, 8, 8, 0);
  (*bad.mutable_payload())[0] = 1;
  EXPECT_EQ(parse_reply(*ZmqHandler(counters, "skip-validation").request({encode_id(1), bad.SerializeAsString()}))
                .status,
            0u);
}

TEST(Zmq, ClientFaultsMalformTheRequest) {
  pb::Request r;
  build_request(&r, PayloadKind::kZeros, 0, 4, 4, 0);
  EXPECT_TRUE(apply_client_fault("nonzero-byte", &r));
  EXPECT_NE(check_request(r, Shape::kUnary), "");
  build_request(&r, PayloadKind::kStructured, 0, 64, 0, 0);
  EXPECT_TRUE(apply_client_fault("corrupt-structured", &r));
  EXPECT_NE(check_request(r, Shape::kSend), "");
  EXPECT_EQ(r.body().ByteSizeLong(), 64u);
  build_request(&r, PayloadKind::kZeros, 0, 4, 0, 0);
  EXPECT_TRUE(apply_client_fault("response-size-too-large", &r));
  EXPECT_NE(check_request(r, Shape::kUnary), "");
  EXPECT_FALSE(apply_client_fault("seq-order", &r));
}

namespace {

ClientArgs zmq_client(const std::string& address, Shape shape, Load load) {
  ClientArgs a;
  a.stack = Stack::kZmq;
  a.tls = false;
  a.server = parse_host_port("--server", address);
  a.shape = shape;
  a.load = load;
  a.concurrency = 3;
  a.streams = 3;
  a.settle_ms = 1000;
  a.request_size = 32;
  a.response_size = shape == Shape::kSend ? 0 : 16;
  a.window_ms = 150;
  a.drain_ms = 2000;
  return a;
}

PhaseResult loopback(const ClientArgs& args) {
  Wakeup wakeup;
  auto never = [] { return false; };
  std::unique_ptr<ClosableStack> stack = connect_zmq(args, wakeup, never);
  EXPECT_EQ(stack->connections(), 2);
  bool abandoned = false;
  OpResult validated = run_single(*stack, 5000000000, wakeup, never, &abandoned);
  EXPECT_TRUE(validated.ok) << validated.message;
  PhaseSpec spec;
  spec.t0 = now_ns();
  spec.window_ns = int64_t(args.window_ms) * 1000000;
  spec.bound_ns = int64_t(args.drain_ms) * 1000000;
  spec.measure = true;
  PhaseResult r = run_phase(*stack, args, spec, wakeup, never);
  stack->close();
  stack.release();  // its loop thread may still be finishing; the process outlives it
  return r;
}

}  // namespace

// The peer's own client against its own server over loopback TCP: unary (closed) and send
// (send-saturation, S lanes); the server's counters match what the client completed.
TEST(Zmq, LoopbackSampleOfClientAgainstServer) {
  ServerArgs sa;
  sa.stack = Stack::kZmq;
  sa.tls = false;
  sa.listen = parse_host_port("--listen", "127.0.0.1:0");
  std::unique_ptr<ServerStack> server = serve_zmq(sa);
  PhaseResult unary = loopback(zmq_client(server->address(), Shape::kUnary, Load::kClosed));
  EXPECT_GT(unary.totals.completed, 0u);
  EXPECT_EQ(unary.totals.failed, 0u) << unary.totals.first_failure;
  EXPECT_EQ(unary.totals.response_bytes, unary.totals.completed * 16);
  EXPECT_GE(unary.submit_cpu_ns, 0);
  PhaseResult send = loopback(zmq_client(server->address(), Shape::kSend, Load::kSendSaturation));
  EXPECT_GT(send.totals.completed, 0u);
  EXPECT_EQ(send.totals.failed, 0u) << send.totals.first_failure;
  EXPECT_EQ(send.totals.responses, 0u);
  EXPECT_EQ(send.max_in_flight, 3u);
  // Every command arrives (loopback, no drops); give the server's loop a moment to read them.
  uint64_t want = send.totals.completed + 1;  // + the validation command
  for (int i = 0; i < 200 && server->counters()["commands"] != counter(want); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  Json c = server->counters();
  EXPECT_EQ(c["commands"], counter(want));
  EXPECT_EQ(c["responses"], counter(unary.totals.completed + 1));
  EXPECT_EQ(c["rejected"], "0");
  EXPECT_EQ(c["dropped"], "0");
  server->stop();
}
