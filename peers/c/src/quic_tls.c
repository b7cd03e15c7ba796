#include "quic_tls.h"

#include <arpa/inet.h>
#include <ngtcp2/ngtcp2_crypto_gnutls.h>
#include <stdio.h>
#include <string.h>

const char QUIC_PRIORITY[] =
    "%DISABLE_TLS13_COMPAT_MODE:NORMAL:-VERS-ALL:+VERS-TLS1.3:-CIPHER-ALL:+AES-256-GCM:"
    "+AES-128-GCM:+CHACHA20-POLY1305:-GROUP-ALL:+GROUP-X25519";

static const gnutls_datum_t ALPN = {(unsigned char *)QUIC_ALPN, sizeof QUIC_ALPN - 1};

bool quic_tls_client_credentials(const char *ca_pem, gnutls_certificate_credentials_t *out,
                                 char *err, size_t errlen) {
    int rc = gnutls_certificate_allocate_credentials(out);
    if (rc < 0) {
        snprintf(err, errlen, "%s", gnutls_strerror(rc));
        return false;
    }
    gnutls_datum_t ca = {(unsigned char *)ca_pem, (unsigned)strlen(ca_pem)};
    rc = gnutls_certificate_set_x509_trust_mem(*out, &ca, GNUTLS_X509_FMT_PEM);
    if (rc <= 0) {
        snprintf(err, errlen, "no usable CA certificate (%s)", rc < 0 ? gnutls_strerror(rc) : "none found");
        return false;
    }
    return true;
}

bool quic_tls_server_credentials(const char *cert_pem, const char *key_pem,
                                 gnutls_certificate_credentials_t *out, char *err, size_t errlen) {
    int rc = gnutls_certificate_allocate_credentials(out);
    if (rc >= 0) {
        gnutls_datum_t c = {(unsigned char *)cert_pem, (unsigned)strlen(cert_pem)};
        gnutls_datum_t k = {(unsigned char *)key_pem, (unsigned)strlen(key_pem)};
        rc = gnutls_certificate_set_x509_key_mem(*out, &c, &k, GNUTLS_X509_FMT_PEM);
    }
    if (rc < 0) {
        snprintf(err, errlen, "%s", gnutls_strerror(rc));
        return false;
    }
    return true;
}

static bool is_ip(const char *name) {
    unsigned char buf[16];
    return inet_pton(AF_INET, name, buf) == 1 || inet_pton(AF_INET6, name, buf) == 1;
}

bool quic_tls_client_session(gnutls_certificate_credentials_t cred, const char *server_name,
                             ngtcp2_crypto_conn_ref *ref, gnutls_session_t *out, char *err,
                             size_t errlen) {
    int rc = gnutls_init(out, GNUTLS_CLIENT | GNUTLS_NO_TICKETS | GNUTLS_NO_END_OF_EARLY_DATA);
    if (rc == 0 && ngtcp2_crypto_gnutls_configure_client_session(*out) != 0) rc = GNUTLS_E_INTERNAL_ERROR;
    if (rc == 0) rc = gnutls_priority_set_direct(*out, QUIC_PRIORITY, NULL);
    if (rc == 0) rc = gnutls_credentials_set(*out, GNUTLS_CRD_CERTIFICATE, cred);
    if (rc == 0) rc = gnutls_alpn_set_protocols(*out, &ALPN, 1, GNUTLS_ALPN_MANDATORY);
    if (rc == 0 && !is_ip(server_name))
        rc = gnutls_server_name_set(*out, GNUTLS_NAME_DNS, server_name, strlen(server_name));
    if (rc != 0) {
        snprintf(err, errlen, "GnuTLS client session: %s", gnutls_strerror(rc));
        return false;
    }
    /* chain to --ca, then the name or IP address against the SAN */
    gnutls_session_set_verify_cert(*out, server_name, 0);
    gnutls_session_set_ptr(*out, ref);
    return true;
}

bool quic_tls_server_session(gnutls_certificate_credentials_t cred, ngtcp2_crypto_conn_ref *ref,
                             gnutls_session_t *out, char *err, size_t errlen) {
    int rc = gnutls_init(out, GNUTLS_SERVER | GNUTLS_NO_TICKETS | GNUTLS_NO_END_OF_EARLY_DATA);
    if (rc == 0 && ngtcp2_crypto_gnutls_configure_server_session(*out) != 0) rc = GNUTLS_E_INTERNAL_ERROR;
    if (rc == 0) rc = gnutls_priority_set_direct(*out, QUIC_PRIORITY, NULL);
    if (rc == 0) rc = gnutls_credentials_set(*out, GNUTLS_CRD_CERTIFICATE, cred);
    if (rc == 0) rc = gnutls_alpn_set_protocols(*out, &ALPN, 1, GNUTLS_ALPN_MANDATORY | GNUTLS_ALPN_SERVER_PRECEDENCE);
    if (rc != 0) {
        snprintf(err, errlen, "GnuTLS server session: %s", gnutls_strerror(rc));
        return false;
    }
    gnutls_session_set_ptr(*out, ref);
    return true;
}

void quic_tls_failure(gnutls_session_t s, char *out, size_t outlen) {
    unsigned status = gnutls_session_get_verify_cert_status(s);
    if (status != 0) {
        gnutls_datum_t text = {NULL, 0};
        if (gnutls_certificate_verification_status_print(status, GNUTLS_CRT_X509, &text, 0) == 0) {
            snprintf(out, outlen, "certificate verification failed: %s", (const char *)text.data);
            gnutls_free(text.data);
            return;
        }
        snprintf(out, outlen, "certificate verification failed (status 0x%x)", status);
        return;
    }
    gnutls_alert_description_t alert = gnutls_alert_get(s);
    const char *name = gnutls_alert_get_name(alert);
    snprintf(out, outlen, "handshake failed%s%s", name ? ": alert " : "", name ? name : "");
}
