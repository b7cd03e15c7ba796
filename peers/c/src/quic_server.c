#include "server.h"
#include "control.h"
void quic_server_main(const server_args *a, const char *cert_pem, const char *key_pem) { out_error_exit(PH_LISTEN, CODE_CONFIG, "quic: not built yet"); }
