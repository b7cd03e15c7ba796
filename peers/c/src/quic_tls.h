/* TLS for the quic stack on GnuTLS (docs/stacks.md "TLS"): TLS 1.3 only, X25519 only, the
 * TLS 1.3 suites with AES-256-GCM preferred, no session tickets, no 0-RTT, ALPN rpcarena/1;
 * the client trusts only --ca and verifies --server-name (DNS name or IP SAN). */
#ifndef RPCARENA_QUIC_TLS_H
#define RPCARENA_QUIC_TLS_H

#include <gnutls/gnutls.h>
#include <ngtcp2/ngtcp2_crypto.h>
#include <stdbool.h>
#include <stddef.h>

#define QUIC_ALPN "rpcarena/1"

/* The priority string: TLS 1.3, AES-256-GCM first, X25519 only, no middlebox compatibility
 * mode (QUIC forbids it). */
extern const char QUIC_PRIORITY[];

/* Credentials shared by every session of the process. */
bool quic_tls_client_credentials(const char *ca_pem, gnutls_certificate_credentials_t *out,
                                 char *err, size_t errlen);
bool quic_tls_server_credentials(const char *cert_pem, const char *key_pem,
                                 gnutls_certificate_credentials_t *out, char *err, size_t errlen);

bool quic_tls_client_session(gnutls_certificate_credentials_t cred, const char *server_name,
                             ngtcp2_crypto_conn_ref *ref, gnutls_session_t *out, char *err,
                             size_t errlen);
bool quic_tls_server_session(gnutls_certificate_credentials_t cred, ngtcp2_crypto_conn_ref *ref,
                             gnutls_session_t *out, char *err, size_t errlen);

/* Why a client handshake failed, in GnuTLS's words (certificate status when verification
 * failed). */
void quic_tls_failure(gnutls_session_t s, char *out, size_t outlen);

#endif
