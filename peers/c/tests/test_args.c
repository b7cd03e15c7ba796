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
    CHECK(!parse_with(sat, 4, "--load", "send-saturation", &cmd, err) && strstr(err, "client streams only"));
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

int main(void) {
    RUN(a_full_client_command_parses);
    RUN(bad_arguments_are_refused_by_name);
    RUN(model_arguments_belong_to_their_model);
    RUN(server_arguments);
    DONE();
}
