/* The zmq stack end to end on loopback, against the built peer (argv[1]): a raw libzmq ROUTER
 * sends the server malformed messages, which it must count in `rejected`, answer with Status 3
 * where the id is readable, and describe in `first_rejection`; then the peer's own client runs a
 * unary sample and a send-saturation sample against it, and the server's `commands` over the
 * window must equal the client's `sent`. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "zmq_common.h"

typedef struct {
    pid_t pid;
    FILE *in, *out;
    char line[1 << 16];
} proc;

static bool spawn(proc *p, char *const argv[]) {
    int to[2], from[2];
    if (pipe(to) || pipe(from)) return false;
    p->pid = fork();
    if (p->pid == 0) {
        dup2(to[0], 0);
        dup2(from[1], 1);
        close(to[1]);
        close(from[0]);
        execv(argv[0], argv);
        _exit(127);
    }
    close(to[0]);
    close(from[1]);
    p->in = fdopen(to[1], "w");
    p->out = fdopen(from[0], "r");
    return p->pid > 0;
}

static const char *next_line(proc *p) {
    if (!fgets(p->line, sizeof p->line, p->out)) return "";
    return p->line;
}

static void say(proc *p, const char *cmd) {
    fprintf(p->in, "%s\n", cmd);
    fflush(p->in);
}

static int finish(proc *p) {
    int status = 0;
    fclose(p->in);
    waitpid(p->pid, &status, 0);
    fclose(p->out);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* A counter of an event line, or UINT64_MAX when absent. */
static uint64_t counter(const char *line, const char *key) {
    char k[64];
    snprintf(k, sizeof k, "\"%s\":\"", key);
    const char *p = strstr(line, k);
    return p ? strtoull(p + strlen(k), NULL, 10) : UINT64_MAX;
}

static void *raw_client(void *ctx, const char *address) {
    char err[200], ep[300];
    void *s = zmq_router(ctx, false, NULL, err, sizeof err);
    zmq_endpoint(address, ep, sizeof ep);
    zmq_connect(s, ep);
    zframe hello[2] = {{(const uint8_t *)ZMQ_REQUEST_ROUTING_ID, 16}, {(const uint8_t *)ZMQ_HELLO, 5}};
    for (int i = 0; i < 5000 && zmq_send_frames(s, hello, 2) != 0; i++) usleep(1000);
    return s;
}

/* Waits up to 2 s for a message; its frames after the routing id go to `in`. */
static size_t receive(void *s, zmq_in *in, zframe *frames) {
    zmq_pollitem_t item = {s, 0, ZMQ_POLLIN, 0};
    if (zmq_poll(&item, 1, 2000) <= 0 || !zmq_in_recv(s, in)) return 0;
    return zmq_in_frames(in, frames);
}

static void the_server_counts_and_describes_malformed_messages(void *ctx, proc *server, const char *address) {
    void *s = raw_client(ctx, address);
    zmq_in in;
    zframe fr[ZMQ_MAX_FRAMES];
    CHECK(receive(s, &in, fr) == 2 && fr[0].len == 5 && fr[1].len > 0); /* [HELLO][port] */
    zmq_in_close(&in);
    const uint8_t id7[7] = {0}, id1[8] = {0, 0, 0, 0, 0, 0, 0, 1}, id2[8] = {0, 0, 0, 0, 0, 0, 0, 2};
    const uint8_t x = 'x', body[4] = {0x08, 0x03, 0x10, 0x04}, junk[2] = {0xff, 0xff};
    zframe rid = {(const uint8_t *)ZMQ_REQUEST_ROUTING_ID, 16};
    zframe m1[3] = {rid, {id7, 7}, {&x, 1}};             /* an id that cannot be read */
    zframe m2[4] = {rid, {id1, 8}, {body, 4}, {body, 4}}; /* three frames */
    zframe m3[3] = {rid, {id2, 8}, {junk, 2}};           /* a body that does not decode */
    zframe ok[3] = {rid, {id2, 8}, {body, 4}};           /* Request{seq 3, response_size 4} */
    CHECK(zmq_send_frames(s, m1, 3) == 0 && zmq_send_frames(s, m2, 4) == 0 && zmq_send_frames(s, m3, 3) == 0);
    CHECK(zmq_send_frames(s, ok, 3) == 0);
    uint32_t codes[3] = {0};
    size_t lens[3] = {0};
    for (int k = 0; k < 3; k++) { /* the readable ids are answered: [id][Status 3][], then the good one */
        size_t n = receive(s, &in, fr);
        CHECK(n == 3);
        pb_status *st = n == 3 ? rpcarena__bench__v1__status__unpack(NULL, fr[1].len, fr[1].data) : NULL;
        codes[k] = st ? st->code : 99;
        lens[k] = n == 3 ? fr[2].len : 99;
        if (st) rpcarena__bench__v1__status__free_unpacked(st, NULL);
        zmq_in_close(&in);
    }
    CHECK(codes[0] == 3 && codes[1] == 3 && codes[2] == 0 && lens[0] == 0 && lens[2] == 8);
    say(server, "WINDOW END");
    const char *w = next_line(server);
    CHECK(counter(w, "rejected") == 3 && counter(w, "rpcs") == 4 && counter(w, "responses") == 3);
    CHECK(strstr(w, "\"first_rejection\":\"request endpoint: an id frame of 7 bytes, expected 8; 2 frames "
                    "of 7 and 1 bytes: [00 00 00 00 00 00 00] [78]\"") != NULL);
    zmq_close(s);
}

static char *const *client_argv(const char *bin, const char *address, const char *shape, const char *load) {
    static char *argv[40];
    static char model[4][32];
    int n = 0;
    const char *fixed[] = {"client", "--stack", "zmq", "--tls", "off", "--server", address, "--shape", shape,
                           "--concurrency", "2", "--request-size", "32", "--response-size", "32",
                           "--messages-per-stream", "1", "--warmup-ms", "100", "--window-ms", "300",
                           "--drain-ms", "1000", "--load"};
    argv[n++] = (char *)bin;
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++) argv[n++] = (char *)fixed[i];
    argv[n++] = (char *)load;
    if (strcmp(load, "send-saturation") == 0) {
        snprintf(model[0], 32, "--streams");
        snprintf(model[1], 32, "2");
        snprintf(model[2], 32, "--settle-ms");
        snprintf(model[3], 32, "500");
        for (int i = 0; i < 4; i++) argv[n++] = model[i];
    }
    argv[n] = NULL;
    return argv;
}

/* One sample of the peer's client; returns the server's `commands` over the window minus the
 * client's `sent` (0 when they agree), after checking the client's events. */
static int64_t sample(proc *server, const char *bin, const char *address, const char *shape, const char *load) {
    proc c;
    CHECK(spawn(&c, client_argv(bin, address, shape, load)));
    const char *armed = next_line(&c);
    CHECK(strstr(armed, "\"event\":\"armed\"") && strstr(armed, "\"connections\":2") &&
          strstr(armed, "\"warmup_segments\":[\""));
    usleep(300000); /* the controller's settle before START: warmup commands still queued arrive */
    say(&c, "START");
    say(server, "WINDOW START");
    uint64_t before = counter(next_line(server), "commands");
    char smp[1 << 16];
    snprintf(smp, sizeof smp, "%s", next_line(&c));
    CHECK(strstr(smp, "\"event\":\"sample\"") && counter(smp, "failed") == 0 && counter(smp, "completed") > 0);
    CHECK(counter(smp, "submit_cpu_ns") != UINT64_MAX && counter(smp, "submit_cpu_ns") > 0);
    usleep(300000); /* the settle: commands still queued reach the server */
    say(server, "WINDOW END");
    uint64_t after = counter(next_line(server), "commands");
    say(&c, "SHUTDOWN");
    CHECK(strstr(next_line(&c), "\"event\":\"stopped\""));
    CHECK(finish(&c) == 0);
    if (strcmp(shape, "send") != 0) return 0;
    CHECK(counter(smp, "received") == UINT64_MAX); /* only the server knows */
    int64_t diff = (int64_t)(after - before) - (int64_t)counter(smp, "sent");
    if (diff) fprintf(stderr, "server commands %llu, client sent %llu\n", (unsigned long long)(after - before),
                      (unsigned long long)counter(smp, "sent"));
    return diff;
}

#define RUN_ON(step)                                                                        \
    do {                                                                                    \
        int before = checks_failed;                                                         \
        step;                                                                               \
        printf("%s %s\n", checks_failed == before ? "ok  " : "FAIL", #step);                \
    } while (0)

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: test_zmq_loopback PEER_BINARY\n");
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    char *server_argv[] = {argv[1], "server", "--stack", "zmq", "--listen", "127.0.0.1:0", "--tls", "off", NULL};
    proc server;
    CHECK(spawn(&server, server_argv));
    const char *ready = next_line(&server);
    const char *a = strstr(ready, "\"address\":\"");
    CHECK(a != NULL);
    if (!a) return 1;
    char address[64];
    snprintf(address, sizeof address, "%.*s", (int)strcspn(a + 11, "\""), a + 11);
    void *ctx = zmq_ctx_new();
    RUN_ON(the_server_counts_and_describes_malformed_messages(ctx, &server, address));
    RUN_ON(CHECK(sample(&server, argv[1], address, "unary", "closed") == 0));
    RUN_ON(CHECK(sample(&server, argv[1], address, "send", "send-saturation") == 0));
    zmq_ctx_term(ctx);
    say(&server, "SHUTDOWN");
    CHECK(strstr(next_line(&server), "\"event\":\"stopped\""));
    CHECK(finish(&server) == 0);
    DONE();
}
