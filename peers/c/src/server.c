#include "server.h"

#include <gnutls/gnutls.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "control.h"
#include "json.h"
#include "util.h"

bool check_server_credentials(const char *cert_pem, const char *key_pem, char *err, size_t errlen) {
    gnutls_certificate_credentials_t cred;
    if (gnutls_certificate_allocate_credentials(&cred) < 0) {
        snprintf(err, errlen, "out of memory");
        return false;
    }
    gnutls_datum_t c = {(unsigned char *)cert_pem, (unsigned)strlen(cert_pem)};
    gnutls_datum_t k = {(unsigned char *)key_pem, (unsigned)strlen(key_pem)};
    int rc = gnutls_certificate_set_x509_key_mem(cred, &c, &k, GNUTLS_X509_FMT_PEM);
    gnutls_certificate_free_credentials(cred);
    if (rc < 0) {
        snprintf(err, errlen, "%s", gnutls_strerror(rc));
        return false;
    }
    return true;
}

static char first_rejection[1024];
static atomic_int rejection_state; /* 0 none, 1 being written, 2 written */

void server_note_rejection(const char *fmt, ...) {
    int none = 0;
    if (!atomic_compare_exchange_strong(&rejection_state, &none, 1)) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(first_rejection, sizeof first_rejection, fmt, ap);
    va_end(ap);
    for (char *p = first_rejection; *p; p++)
        if (*p == '\n' || *p == '\r') *p = ' '; /* one line */
    atomic_store_explicit(&rejection_state, 2, memory_order_release);
}

const char *server_first_rejection(void) {
    return atomic_load_explicit(&rejection_state, memory_order_acquire) == 2 ? first_rejection : NULL;
}

void server_ready(const char *address, counters_reader read) {
    json_t j;
    json_init(&j);
    json_open(&j);
    json_int(&j, "protocol", 1);
    json_str(&j, "event", "ready");
    json_str(&j, "role", "server");
    json_str(&j, "address", address);
    json_int(&j, "pid", (int64_t)getpid());
    json_close(&j);
    out_event_then_phase(json_text(&j), PH_SERVE);
    json_free(&j);
    control_start_server(read);
}

void server_stopped(counters_reader read) {
    server_counters c = {0};
    read(&c);
    out_stopped_exit(&c);
}

void server_main(const server_args *a) {
    if (a->stack == STACK_ZMQ) {
        control_set_phase(PH_LISTEN);
        zmq_server_main(a);
    }
    if (!a->tls) { /* plaintext (1.3): gRPC without credentials; quic never gets here */
        control_set_phase(PH_LISTEN);
        grpc_server_main(a, NULL, NULL);
    }
    char err[512] = "";
    char *cert = read_file(a->cert, 1 << 20, NULL, err, sizeof err);
    if (!cert) out_error_exit(PH_STARTUP, CODE_CONFIG, "--cert %s: %s", a->cert, err);
    char *key = read_file(a->key, 1 << 20, NULL, err, sizeof err);
    if (!key) out_error_exit(PH_STARTUP, CODE_CONFIG, "--key %s: %s", a->key, err);
    if (!strstr(cert, "-----BEGIN CERTIFICATE-----"))
        out_error_exit(PH_STARTUP, CODE_CONFIG, "--cert %s: no PEM certificate in the file", a->cert);
    if (!check_server_credentials(cert, key, err, sizeof err))
        out_error_exit(PH_STARTUP, CODE_CONFIG, "--cert %s / --key %s: %s", a->cert, a->key, err);
    control_set_phase(PH_LISTEN);
    if (a->stack == STACK_GRPC) grpc_server_main(a, cert, key);
    quic_server_main(a, cert, key);
}
