#include <gtest/gtest.h>

#include "args.h"

using namespace rpcarena;

namespace {
std::vector<std::string> client() {
  return {"client", "--stack", "quic", "--server", "127.0.0.1:4000", "--server-name", "localhost",
          "--ca", "ca.pem", "--shape", "bidi", "--concurrency", "4", "--request-size", "256",
          "--response-size", "0", "--messages-per-stream", "128", "--load", "closed",
          "--warmup-ms", "0", "--window-ms", "5000", "--drain-ms", "1000"};
}
std::vector<std::string> with(std::vector<std::string> a, const std::string& key, const std::string& value) {
  for (size_t i = 0; i + 1 < a.size(); ++i) {
    if (a[i] == key) {
      a[i + 1] = value;
      return a;
    }
  }
  a.push_back(key);
  a.push_back(value);
  return a;
}
std::string refusal(const std::vector<std::string>& a) {
  try {
    parse_args(a);
  } catch (const ArgError& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST(Args, AFullClientCommandParses) {
  Command c = parse_args(client());
  ASSERT_EQ(c.kind, Command::Kind::kClient);
  EXPECT_EQ(c.client.stack, Stack::kQuic);
  EXPECT_EQ(c.client.shape, Shape::kBidi);
  EXPECT_EQ(c.client.server.port, 4000);
  EXPECT_EQ(c.client.lanes(), 4u);
}

TEST(Args, RefusesUnknownMissingRepeatedAndOutOfRange) {
  EXPECT_NE(refusal(with(client(), "--bogus", "1")).find("--bogus"), std::string::npos);
  auto missing = client();
  missing.erase(missing.begin() + 11, missing.begin() + 13);  // --concurrency 4
  EXPECT_NE(refusal(missing).find("--concurrency"), std::string::npos);
  auto repeated = client();
  repeated.push_back("--shape");
  repeated.push_back("unary");
  EXPECT_NE(refusal(repeated).find("more than once"), std::string::npos);
  EXPECT_NE(refusal(with(client(), "--concurrency", "10001")).find("--concurrency"), std::string::npos);
  EXPECT_NE(refusal(with(client(), "--concurrency", "-1")).find("--concurrency"), std::string::npos);
  EXPECT_NE(refusal(with(client(), "--window-ms", "0")).find("--window-ms"), std::string::npos);
  EXPECT_NE(refusal(with(client(), "--request-size", "16777217")).find("--request-size"), std::string::npos);
  EXPECT_NE(refusal(with(client(), "--server", "nohost")).find("--server"), std::string::npos);
  EXPECT_NE(refusal(with(client(), "--stack", "tcp")).find("tcp"), std::string::npos);
  // pingpong (1.2) is served, not driven: refused naming the shape, as any shape the client lacks
  EXPECT_NE(refusal(with(client(), "--shape", "pingpong")).find("--shape pingpong"), std::string::npos);
  EXPECT_NE(refusal(with(client(), "--shape", "lockstep")).find("--shape lockstep"), std::string::npos);
  EXPECT_NE(refusal(with(client(), "--server-name", "bad name!")).find("--server-name"), std::string::npos);
}

TEST(Args, ModelArgumentsBelongToTheirModel) {
  EXPECT_NE(refusal(with(client(), "--rate", "10")).find("--rate does not apply to --load closed"),
            std::string::npos);
  EXPECT_NE(refusal(with(client(), "--load", "open")).find("needs --rate"), std::string::npos);
  auto open = with(with(client(), "--load", "open"), "--rate", "2.5");
  EXPECT_DOUBLE_EQ(parse_args(open).client.rate, 2.5);
  EXPECT_NE(refusal(with(open, "--rate", "0")).find("--rate"), std::string::npos);
  EXPECT_NE(refusal(with(open, "--rate", "1e3")).find("--rate"), std::string::npos);
  auto sat = with(with(with(client(), "--load", "send-saturation"), "--streams", "4"), "--settle-ms", "100");
  EXPECT_NE(refusal(sat).find("--shape client_stream or send"), std::string::npos);
  EXPECT_EQ(parse_args(with(sat, "--shape", "client_stream")).client.lanes(), 4u);
  auto window = with(with(client(), "--load", "window"), "--in-flight", "7");
  EXPECT_EQ(parse_args(window).client.lanes(), 7u);
}

TEST(Args, StructuredPayloadsOfOneOrTwoBytesAreRefused) {
  auto s = with(client(), "--payload", "structured");
  EXPECT_NE(refusal(with(s, "--request-size", "2")).find("cannot be built"), std::string::npos);
  EXPECT_EQ(refusal(with(s, "--request-size", "3")), "");
}

TEST(Args, ServerAndCapabilities) {
  Command c = parse_args({"server", "--stack", "grpc", "--listen", "[::1]:0", "--cert", "c", "--key", "k"});
  EXPECT_EQ(c.server.listen.host, "::1");
  EXPECT_NE(refusal({"server", "--stack", "grpc", "--listen", "::1:0", "--cert", "c", "--key", "k"}), "");
  EXPECT_NE(refusal({"capabilities", "--x"}), "");
  EXPECT_NE(refusal({"serve"}), "");
}

// 1.3: --tls on|off. With off the TLS files are refused, with on (the default) required; quic
// takes only on and zmq only off, each refusal saying why.
TEST(Args, TlsOnOrOff) {
  auto plain = with(client(), "--stack", "grpc");
  plain.erase(plain.begin() + 5, plain.begin() + 9);  // --server-name localhost --ca ca.pem
  EXPECT_NE(refusal(plain).find("needs --server-name"), std::string::npos);
  plain = with(plain, "--tls", "off");
  Command c = parse_args(plain);
  EXPECT_FALSE(c.client.tls);
  EXPECT_EQ(c.client.ca, "");
  EXPECT_TRUE(parse_args(with(client(), "--tls", "on")).client.tls);
  EXPECT_TRUE(parse_args(client()).client.tls);
  EXPECT_EQ(refusal(with(with(plain, "--ca", "ca.pem"), "--tls", "off")), "--ca does not apply to --tls off");
  EXPECT_EQ(refusal(with(plain, "--server-name", "localhost")), "--server-name does not apply to --tls off");
  EXPECT_NE(refusal(with(plain, "--tls", "maybe")).find("--tls maybe is not one of on, off"), std::string::npos);
  EXPECT_NE(refusal(with(plain, "--stack", "quic")).find("QUIC has TLS 1.3 inside"), std::string::npos);
  EXPECT_NE(refusal(with(client(), "--stack", "zmq")).find("zmq has no TLS; run it with --tls off"),
            std::string::npos);
  std::vector<std::string> server = {"server", "--stack", "grpc", "--listen", "127.0.0.1:0", "--tls", "off"};
  EXPECT_FALSE(parse_args(server).server.tls);
  EXPECT_EQ(refusal(with(server, "--cert", "c")), "--cert does not apply to --tls off");
  EXPECT_EQ(refusal(with(server, "--key", "k")), "--key does not apply to --tls off");
  EXPECT_NE(refusal(with(server, "--tls", "on")).find("needs --cert"), std::string::npos);
  EXPECT_NE(refusal(with(server, "--stack", "quic")).find("QUIC has TLS 1.3 inside"), std::string::npos);
  EXPECT_EQ(parse_args(with(server, "--stack", "zmq")).server.stack, Stack::kZmq);
  EXPECT_NE(refusal({"server", "--stack", "zmq", "--listen", "127.0.0.1:0", "--cert", "c", "--key", "k"})
                .find("zmq has no TLS"),
            std::string::npos);
}

// 1.3: shape send on grpc and zmq (every load model, send-saturation included); quic and zmq
// refuse the shapes they cannot carry, naming why.
TEST(Args, SendAndTheShapesOfEachStack) {
  auto zmq = with(with(with(client(), "--stack", "zmq"), "--tls", "off"), "--shape", "send");
  zmq.erase(zmq.begin() + 5, zmq.begin() + 9);
  EXPECT_EQ(parse_args(zmq).client.shape, Shape::kSend);
  auto sat = with(with(with(zmq, "--load", "send-saturation"), "--streams", "8"), "--settle-ms", "200");
  EXPECT_EQ(parse_args(sat).client.lanes(), 8u);
  EXPECT_NE(refusal(with(sat, "--shape", "unary")).find("not --shape unary"), std::string::npos);
  EXPECT_EQ(parse_args(with(zmq, "--shape", "unary")).client.shape, Shape::kUnary);
  EXPECT_NE(refusal(with(zmq, "--shape", "bidi")).find("the zmq stack carries only unary and send"),
            std::string::npos);
  EXPECT_NE(refusal(with(client(), "--shape", "send")).find("native framing answers every request"),
            std::string::npos);
  auto grpc_sat = with(with(with(with(client(), "--stack", "grpc"), "--shape", "send"), "--load", "send-saturation"),
                       "--streams", "8");
  EXPECT_EQ(parse_args(with(grpc_sat, "--settle-ms", "200")).client.shape, Shape::kSend);
}

// --conformance-fault: zmq only, known modes, and a client mode must fit the shape and payload.
TEST(Args, ConformanceFaultsOnZmqOnly) {
  std::vector<std::string> server = {"server", "--stack", "zmq", "--listen", "127.0.0.1:0", "--tls", "off"};
  EXPECT_EQ(parse_args(with(server, "--conformance-fault", "extra-message")).server.conformance_fault,
            "extra-message");
  EXPECT_NE(refusal(with(server, "--conformance-fault", "bogus")).find("is not one of wrong-seq"),
            std::string::npos);
  EXPECT_NE(refusal(with(with(server, "--stack", "grpc"), "--conformance-fault", "wrong-seq"))
                .find("zmq and grpc-cq only, not grpc"),
            std::string::npos);
  auto zmq = with(with(with(client(), "--stack", "zmq"), "--tls", "off"), "--shape", "unary");
  zmq.erase(zmq.begin() + 5, zmq.begin() + 9);
  EXPECT_EQ(parse_args(with(zmq, "--conformance-fault", "nonzero-byte")).client.conformance_fault, "nonzero-byte");
  EXPECT_NE(refusal(with(zmq, "--conformance-fault", "seq-order")).find("not unary"), std::string::npos);
  EXPECT_NE(refusal(with(zmq, "--conformance-fault", "corrupt-structured")).find("needs --payload structured"),
            std::string::npos);
}

// grpc-cq (1.3): TLS on or off, shapes unary and send only (every load model, send-saturation on
// send), and the conformance faults in both roles.
TEST(Args, GrpcCqCarriesUnaryAndSend) {
  auto cq = with(with(client(), "--stack", "grpc-cq"), "--shape", "send");
  EXPECT_EQ(parse_args(cq).client.stack, Stack::kGrpcCq);
  EXPECT_EQ(parse_args(with(cq, "--shape", "unary")).client.shape, Shape::kUnary);
  EXPECT_NE(refusal(with(cq, "--shape", "bidi")).find("grpc-cq carries the reference's two RPCs"),
            std::string::npos);
  EXPECT_NE(refusal(with(cq, "--shape", "client_stream")).find("client_stream is not offered"),
            std::string::npos);
  auto sat = with(with(with(cq, "--load", "send-saturation"), "--streams", "8"), "--settle-ms", "200");
  EXPECT_EQ(parse_args(sat).client.lanes(), 8u);
  auto plain = with(cq, "--tls", "off");
  plain.erase(plain.begin() + 5, plain.begin() + 9);  // --server-name and --ca
  EXPECT_FALSE(parse_args(plain).client.tls);
  EXPECT_EQ(parse_args(with(plain, "--conformance-fault", "nonzero-byte")).client.conformance_fault,
            "nonzero-byte");
  std::vector<std::string> server = {"server", "--stack", "grpc-cq", "--listen", "127.0.0.1:0", "--tls", "off"};
  EXPECT_EQ(parse_args(with(server, "--conformance-fault", "wrong-seq")).server.stack, Stack::kGrpcCq);
}

// 1.4: --client-mode official (the default) is accepted on every client stack; replay (no stack
// here lists it in client_modes), an unknown mode and --payload dated (JSON stacks only) are each
// refused saying what and what to do.
TEST(Args, ClientModeOfficialOnlyAndNoDatedPayload) {
  auto plain = [](std::vector<std::string> a) {
    a.erase(a.begin() + 5, a.begin() + 9);  // --server-name and --ca
    return with(a, "--tls", "off");
  };
  const std::vector<std::vector<std::string>> stacks = {
      with(client(), "--stack", "grpc"), client(),
      plain(with(with(client(), "--stack", "zmq"), "--shape", "unary")),
      with(with(client(), "--stack", "grpc-cq"), "--shape", "unary")};
  for (const auto& base : stacks) {
    std::string stack = base[2];
    Command official = parse_args(with(base, "--client-mode", "official"));  // the default
    EXPECT_EQ(official.client.stack, parse_args(base).client.stack) << stack;
    EXPECT_EQ(official.client.payload, PayloadKind::kZeros) << stack;
    std::string replay = refusal(with(base, "--client-mode", "replay"));
    EXPECT_EQ(replay.rfind("--client-mode replay: no stack of this peer has a replay client", 0), 0u)
        << stack << ": " << replay;
    EXPECT_NE(replay.find("give --client-mode official"), std::string::npos) << stack;
    std::string dated = refusal(with(base, "--payload", "dated"));
    EXPECT_EQ(dated.rfind("--payload dated: no stack of this peer carries it", 0), 0u)
        << stack << ": " << dated;
    EXPECT_NE(dated.find("JSON stacks only"), std::string::npos) << stack;
    EXPECT_NE(dated.find("use --payload zeros or structured"), std::string::npos) << stack;
  }
  EXPECT_EQ(refusal(with(client(), "--client-mode", "lean")),
            "--client-mode lean is not one of official, replay (this peer's stacks take official only)");
  EXPECT_NE(refusal(with(client(), "--payload", "json")).find("--payload json is not one of zeros, structured"),
            std::string::npos);
  // --payload is a client argument; the server refuses it as any argument it does not know.
  EXPECT_NE(refusal({"server", "--stack", "grpc", "--listen", "127.0.0.1:0", "--tls", "off", "--payload",
                     "dated"})
                .find("unknown argument --payload for server"),
            std::string::npos);
}
