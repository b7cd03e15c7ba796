/* Argument refusal: unknown, missing, repeated, out-of-range values and model arguments. */
#include <string.h>

#include "args.h"
#include "check.h"

static const char *base[] = {"peer", "client", "--stack", "quic", "--server", "127.0.0.1:4000",
                             "--server-name", "localhost", "--ca", "ca.pem", "--shape", "bidi",
                             "--concurrency", "4", "--request-size", "256", "--response-size", "0",
                             "--messages-per-stream", "128", "--load", "closed", "--warmup-ms", "0",
                             "--window-ms", "5000", "--drain-ms", "1000"};
#define NBASE (int)(sizeof base / sizeof base[0])

static bool parse_with(const char **extra, int n_extra, const char *replace, const char *value,
                       command_t *cmd, char *err) {
    const char *argv[64];
    int argc = 0;
    for (int i = 0; i < NBASE; i++) {
        argv[argc++] = base[i];
        if (replace && i > 0 && strcmp(base[i - 1], replace) == 0) argv[argc - 1] = value;
    }
    if (replace && value == NULL) { /* drop the argument */
        for (int i = 0; i < argc; i++)
            if (strcmp(argv[i], replace) == 0) {
                memmove(&argv[i], &argv[i + 2], (size_t)(argc - i - 2) * sizeof argv[0]);
                argc -= 2;
                break;
            }
    }
    for (int i = 0; i < n_extra; i++) argv[argc++] = extra[i];
    return args_parse(argc, (char **)argv, cmd, err, 512);
}

static void a_full_client_command_parses(void) {
    command_t cmd;
    char err[512];
    CHECK(parse_with(NULL, 0, NULL, NULL, &cmd, err));
    CHECK(cmd.kind == CMD_CLIENT && cmd.client.stack == STACK_QUIC && cmd.client.shape == SHAPE_BIDI);
    CHECK(cmd.client.concurrency == 4 && cmd.client.messages == 128 && cmd.client.window_ms == 5000);
    CHECK(cmd.client.payload == PAYLOAD_ZEROS);
    CHECK(client_lanes(&cmd.client) == 4);
}

static void bad_arguments_are_refused_by_name(void) {
    command_t cmd;
    char err[512];
    const char *unknown[] = {"--bogus", "1"};
    CHECK(!parse_with(unknown, 2, NULL, NULL, &cmd, err) && strstr(err, "--bogus"));
    const char *repeated[] = {"--shape", "unary"};
    CHECK(!parse_with(repeated, 2, NULL, NULL, &cmd, err) && strstr(err, "--shape"));
    CHECK(!parse_with(NULL, 0, "--drain-ms", NULL, &cmd, err) && strstr(err, "--drain-ms"));
    CHECK(!parse_with(NULL, 0, "--concurrency", "0", &cmd, err) && strstr(err, "--concurrency"));
    CHECK(!parse_with(NULL, 0, "--concurrency", "10001", &cmd, err));
    CHECK(!parse_with(NULL, 0, "--concurrency", "-1", &cmd, err));
    CHECK(!parse_with(NULL, 0, "--request-size", "16777217", &cmd, err));
    CHECK(parse_with(NULL, 0, "--request-size", "16777216", &cmd, err));
    CHECK(!parse_with(NULL, 0, "--window-ms", "0", &cmd, err));
    CHECK(!parse_with(NULL, 0, "--window-ms", "4294967296", &cmd, err));
    CHECK(!parse_with(NULL, 0, "--stack", "tcp", &cmd, err) && strstr(err, "--stack"));
    /* pingpong (1.2) is served, not driven: refused by name, like any shape the client lacks */
    CHECK(!parse_with(NULL, 0, "--shape", "pingpong", &cmd, err) && strstr(err, "--shape pingpong"));
    CHECK(!parse_with(NULL, 0, "--shape", "lockstep", &cmd, err) && strstr(err, "--shape lockstep"));
    CHECK(!parse_with(NULL, 0, "--server", "localhost", &cmd, err));
    const char *dangling[] = {"--payload"};
    CHECK(!parse_with(dangling, 1, NULL, NULL, &cmd, err));
}

static void model_arguments_belong_to_their_model(void) {
    command_t cmd;
    char err[512];
    const char *rate[] = {"--rate", "1000"};
    CHECK(!parse_with(rate, 2, NULL, NULL, &cmd, err) && strstr(err, "--rate does not apply"));
    CHECK(!parse_with(NULL, 0, "--load", "open", &cmd, err) && strstr(err, "needs --rate"));
    const char *open[] = {"--rate", "2.5", "--arrival", "poisson", "--seed", "18446744073709551615"};
    CHECK(parse_with(open, 6, "--load", "open", &cmd, err));
    CHECK(cmd.client.rate == 2.5 && cmd.client.arrival == ARRIVAL_POISSON && cmd.client.seed == UINT64_MAX);
    const char *bad_rate[] = {"--rate", "0"};
    CHECK(!parse_with(bad_rate, 2, "--load", "open", &cmd, err));
    const char *window[] = {"--in-flight", "100"};
    CHECK(parse_with(window, 2, "--load", "window", &cmd, err) && client_lanes(&cmd.client) == 100);
    const char *sat[] = {"--streams", "8", "--settle-ms", "200"};
    CHECK(!parse_with(sat, 4, "--load", "send-saturation", &cmd, err) &&
          strstr(err, "client streams or one-way commands only, not --shape bidi"));
    const char *structured[] = {"--payload", "structured"};
    CHECK(!parse_with(structured, 2, "--request-size", "2", &cmd, err));
    CHECK(parse_with(structured, 2, "--request-size", "3", &cmd, err));
}

static void server_arguments(void) {
    command_t cmd;
    char err[512];
    const char *ok[] = {"peer", "server", "--stack", "grpc", "--listen", "[::1]:0", "--cert", "c.pem", "--key", "k.pem"};
    CHECK(args_parse(10, (char **)ok, &cmd, err, sizeof err) && cmd.kind == CMD_SERVER);
    const char *missing[] = {"peer", "server", "--stack", "grpc", "--listen", "127.0.0.1:0"};
    CHECK(!args_parse(6, (char **)missing, &cmd, err, sizeof err) && strstr(err, "--cert"));
    const char *client_arg[] = {"peer", "server", "--stack", "grpc", "--shape", "unary"};
    CHECK(!args_parse(6, (char **)client_arg, &cmd, err, sizeof err));
    const char *caps[] = {"peer", "capabilities"};
    CHECK(args_parse(2, (char **)caps, &cmd, err, sizeof err) && cmd.kind == CMD_CAPABILITIES);
    char host[64];
    uint16_t port;
    CHECK(split_host_port("[::1]:443", host, sizeof host, &port) && strcmp(host, "::1") == 0 && port == 443);
    CHECK(!split_host_port("127.0.0.1:65536", host, sizeof host, &port));
}

/* 1.3: --tls on|off; the TLS files required with on, refused with off; quic refuses off. */
static void tls_on_and_off(void) {
    command_t cmd;
    char err[512];
    CHECK(parse_with(NULL, 0, NULL, NULL, &cmd, err) && cmd.client.tls); /* on by default */
    const char *on[] = {"--tls", "on"};
    CHECK(parse_with(on, 2, NULL, NULL, &cmd, err) && cmd.client.tls);
    CHECK(!parse_with(on, 2, "--ca", NULL, &cmd, err) && strstr(err, "missing argument --ca"));
    const char *bad[] = {"--tls", "yes"};
    CHECK(!parse_with(bad, 2, NULL, NULL, &cmd, err) && strstr(err, "--tls yes: expected on or off"));
    /* --tls off on quic: QUIC has TLS inside */
    const char *off[] = {"--tls", "off"};
    CHECK(!parse_with(off, 2, NULL, NULL, &cmd, err) && strstr(err, "does not apply to --stack quic"));
    const char *grpc_off[] = {"peer", "client", "--stack", "grpc", "--tls", "off", "--server", "127.0.0.1:4000",
                              "--shape", "unary", "--concurrency", "4", "--request-size", "0",
                              "--response-size", "0", "--messages-per-stream", "1", "--load", "closed",
                              "--warmup-ms", "0", "--window-ms", "5", "--drain-ms", "1"};
    CHECK(args_parse(26, (char **)grpc_off, &cmd, err, sizeof err) && !cmd.client.tls);
    const char *grpc_off_ca[28];
    memcpy(grpc_off_ca, grpc_off, sizeof grpc_off);
    grpc_off_ca[26] = "--ca";
    grpc_off_ca[27] = "ca.pem";
    CHECK(!args_parse(28, (char **)grpc_off_ca, &cmd, err, sizeof err) && strstr(err, "--ca does not apply to --tls off"));
    grpc_off_ca[26] = "--server-name";
    CHECK(!args_parse(28, (char **)grpc_off_ca, &cmd, err, sizeof err) && strstr(err, "--server-name does not apply"));
    const char *srv_off[] = {"peer", "server", "--stack", "grpc", "--listen", "127.0.0.1:0", "--tls", "off", "--key", "k.pem"};
    CHECK(!args_parse(10, (char **)srv_off, &cmd, err, sizeof err) && strstr(err, "--key does not apply to --tls off"));
    CHECK(args_parse(8, (char **)srv_off, &cmd, err, sizeof err) && !cmd.server.tls);
    const char *srv_quic[] = {"peer", "server", "--stack", "quic", "--listen", "127.0.0.1:0", "--tls", "off"};
    CHECK(!args_parse(8, (char **)srv_quic, &cmd, err, sizeof err) && strstr(err, "QUIC has TLS 1.3 inside"));
}

/* 1.3: zmq takes only --tls off and the shapes unary and send; send-saturation takes send;
 * quic has no send; the conformance faults are zmq's only. */
static void zmq_and_send(void) {
    command_t cmd;
    char err[512];
    const char *zmq[] = {"peer", "client", "--stack", "zmq", "--tls", "off", "--server", "127.0.0.1:4000",
                         "--shape", "send", "--concurrency", "4", "--request-size", "0",
                         "--response-size", "0", "--messages-per-stream", "1", "--load", "send-saturation",
                         "--warmup-ms", "0", "--window-ms", "5", "--drain-ms", "1", "--streams", "8",
                         "--settle-ms", "200", "--conformance-fault", "nonzero-byte"};
    CHECK(args_parse(30, (char **)zmq, &cmd, err, sizeof err) && cmd.client.stack == STACK_ZMQ &&
          cmd.client.shape == SHAPE_SEND && client_lanes(&cmd.client) == 8);
    CHECK(args_parse(32, (char **)zmq, &cmd, err, sizeof err) && cmd.client.fault == CF_NONZERO_BYTE);
    const char *v[32];
    memcpy(v, zmq, sizeof zmq);
    v[31] = "seq-order";
    CHECK(!args_parse(32, (char **)v, &cmd, err, sizeof err) && strstr(err, "applies to --shape client_stream"));
    v[31] = "wrong-seq"; /* a server mode */
    CHECK(!args_parse(32, (char **)v, &cmd, err, sizeof err) && strstr(err, "--conformance-fault wrong-seq"));
    memcpy(v, zmq, sizeof zmq);
    v[5] = "on";
    CHECK(!args_parse(30, (char **)v, &cmd, err, sizeof err) && strstr(err, "zmq has no TLS; run it with --tls off"));
    memcpy(v, zmq, sizeof zmq);
    v[9] = "bidi";
    CHECK(!args_parse(30, (char **)v, &cmd, err, sizeof err) && strstr(err, "--stack zmq carries unary and send only"));
    v[3] = "quic";
    v[5] = "on";
    v[9] = "send";
    CHECK(!args_parse(30, (char **)v, &cmd, err, sizeof err) && strstr(err, "missing argument --server-name"));
    const char *quic_send[] = {"--shape", "send"};
    CHECK(!parse_with(quic_send, 0, "--shape", "send", &cmd, err) && strstr(err, "--stack quic has no one-way message"));
    const char *fault_quic[] = {"--conformance-fault", "nonzero-byte"};
    CHECK(!parse_with(fault_quic, 2, NULL, NULL, &cmd, err) && strstr(err, "on --stack zmq only"));
    const char *srv[] = {"peer", "server", "--stack", "zmq", "--listen", "127.0.0.1:0", "--tls", "off",
                         "--conformance-fault", "no-validation"};
    CHECK(args_parse(10, (char **)srv, &cmd, err, sizeof err) && cmd.server.fault == SF_SKIP_VALIDATION);
    srv[9] = "early-status";
    CHECK(args_parse(10, (char **)srv, &cmd, err, sizeof err) && cmd.server.fault == SF_EARLY_STATUS);
    CHECK(!args_parse(6, (char **)srv, &cmd, err, sizeof err) && strstr(err, "zmq has no TLS"));
}

/* 1.4: --client-mode official (the default) is taken and changes nothing; replay, an unknown
 * mode and --payload dated are refused by name, saying why and what to use instead; the server
 * takes neither argument. */
static void client_mode_and_dated(void) {
    command_t cmd, plain;
    char err[512];
    CHECK(parse_with(NULL, 0, NULL, NULL, &plain, err));
    const char *official[] = {"--client-mode", "official"};
    CHECK(parse_with(official, 2, NULL, NULL, &cmd, err));
    CHECK(memcmp(&cmd.client, &plain.client, sizeof cmd.client) == 0);
    const char *twice[] = {"--client-mode", "official", "--client-mode", "official"};
    CHECK(!parse_with(twice, 4, NULL, NULL, &cmd, err) && strstr(err, "--client-mode given more than once"));
    const char *replay[] = {"--client-mode", "replay"};
    CHECK(!parse_with(replay, 2, NULL, NULL, &cmd, err) &&
          strstr(err, "--client-mode replay: no stack of this peer takes it") &&
          strstr(err, "use --client-mode official"));
    const char *unknown[] = {"--client-mode", "lean"};
    CHECK(!parse_with(unknown, 2, NULL, NULL, &cmd, err) &&
          strstr(err, "--client-mode lean: not a client mode"));
    const char *dated[] = {"--payload", "dated"};
    CHECK(!parse_with(dated, 2, NULL, NULL, &cmd, err) &&
          strstr(err, "--payload dated: no stack of this peer carries it") &&
          strstr(err, "use --payload zeros or structured"));
    CHECK(!parse_with(dated, 2, "--request-size", "0", &cmd, err) && strstr(err, "--payload dated"));
    const char *bogus[] = {"--payload", "json"};
    CHECK(!parse_with(bogus, 2, NULL, NULL, &cmd, err) && strstr(err, "--payload json: expected zeros or structured"));
    const char *srv[] = {"peer", "server", "--stack", "zmq", "--listen", "127.0.0.1:0", "--tls", "off",
                         "--client-mode", "official"};
    CHECK(!args_parse(10, (char **)srv, &cmd, err, sizeof err) &&
          strstr(err, "unknown argument --client-mode for the server command"));
    srv[8] = "--payload";
    srv[9] = "dated";
    CHECK(!args_parse(10, (char **)srv, &cmd, err, sizeof err) &&
          strstr(err, "unknown argument --payload for the server command"));
}

int main(void) {
    RUN(a_full_client_command_parses);
    RUN(bad_arguments_are_refused_by_name);
    RUN(model_arguments_belong_to_their_model);
    RUN(server_arguments);
    RUN(tls_on_and_off);
    RUN(zmq_and_send);
    RUN(client_mode_and_dated);
    DONE();
}
