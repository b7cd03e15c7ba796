/* TLS settings gRPC core's C API cannot make, made where gRPC makes them: in OpenSSL.
 *
 * gRPC core 1.51 (Debian's libgrpc29, built on OpenSSL 3) has no C API for the TLS version or
 * the key exchange groups, and its TSI layer pins every SSL_CTX it creates to the P-256 group
 * (SSL_CTX_set_tmp_ecdh with prime256v1) and a TLS 1.2 minimum. A P-256-only client cannot
 * even handshake with the Rust peer, which offers X25519 only (docs/stacks.md "TLS"). So this
 * executable defines SSL_CTX_ctrl, the OpenSSL entry point behind both settings; by ordinary ELF
 * symbol interposition libgrpc's calls reach it first, and it
 *   - turns the P-256 pin into X25519 only (SSL_CTRL_SET_GROUPS_LIST "X25519"),
 *   - raises the minimum protocol version to TLS 1.3,
 *   - switches the session cache off and sends no session tickets (no resumption),
 * then hands everything else to OpenSSL unchanged. No other OpenSSL user lives in this process
 * (the quic stack uses GnuTLS). grpc_tls_contexts_adjusted() says whether it ran. */
#include <dlfcn.h>
#include <openssl/ssl.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "util.h"

typedef long (*ctrl_fn)(SSL_CTX *, int, long, void *);
static ctrl_fn real_ctrl;
static atomic_uint adjusted;

unsigned grpc_tls_contexts_adjusted(void) { return atomic_load(&adjusted); }

long SSL_CTX_ctrl(SSL_CTX *ctx, int cmd, long larg, void *parg);

long SSL_CTX_ctrl(SSL_CTX *ctx, int cmd, long larg, void *parg) {
    ctrl_fn real = __atomic_load_n(&real_ctrl, __ATOMIC_ACQUIRE);
    if (!real) {
        real = (ctrl_fn)dlsym(RTLD_NEXT, "SSL_CTX_ctrl");
        if (!real) {
            diag("cannot find OpenSSL's SSL_CTX_ctrl: %s", dlerror());
            abort();
        }
        __atomic_store_n(&real_ctrl, real, __ATOMIC_RELEASE);
    }
    switch (cmd) {
    case SSL_CTRL_SET_TMP_ECDH:
        atomic_fetch_add(&adjusted, 1);
        SSL_CTX_set_num_tickets(ctx, 0);
        real(ctx, SSL_CTRL_SET_SESS_CACHE_MODE, SSL_SESS_CACHE_OFF, NULL);
        return real(ctx, SSL_CTRL_SET_GROUPS_LIST, 0, (void *)"X25519");
    case SSL_CTRL_SET_MIN_PROTO_VERSION:
        larg = TLS1_3_VERSION;
        break;
    case SSL_CTRL_SET_SESS_CACHE_MODE:
        larg = SSL_SESS_CACHE_OFF;
        break;
    default:
        break;
    }
    return real(ctx, cmd, larg, parg);
}
