/* rpcarena-peer-c: the C peer of rpcarena (docs/peer-protocol.md, revision 1.4). */
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "args.h"
#include "capabilities.h"
#include "client.h"
#include "control.h"
#include "grpc_common.h"
#include "server.h"

int main(int argc, char **argv) {
    signal(SIGPIPE, SIG_IGN);
    command_t cmd;
    char err[600];
    if (!args_parse(argc, argv, &cmd, err, sizeof err)) out_error_exit(PH_STARTUP, CODE_CONFIG, "%s", err);
    switch (cmd.kind) {
    case CMD_CAPABILITIES: {
        char exe[PATH_MAX];
        ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
        exe[n > 0 ? n : 0] = 0;
        char *line = capabilities_event(exe, worker_count());
        if (!line) out_error_exit(PH_STARTUP, CODE_INTERNAL, "cannot build the capabilities event");
        out_event(line);
        free(line);
        return 0;
    }
    case CMD_SERVER: server_main(&cmd.server);
    case CMD_CLIENT: client_main(&cmd.client);
    }
    return 1;
}
