#include "grpc_tuning.h"

#include <dlfcn.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include <grpc/support/sync.h>
#include <openssl/ssl.h>

#include "args.h"
#include "net.h"
#include "transport.h"

// --- The socket mutator ABI of gRPC 1.51 --------------------------------------------------------
// gRPC ships no public header for socket mutators (ChannelArguments::SetSocketMutator takes one),
// so these declarations restate src/core/lib/iomgr/socket_mutator.h of gRPC 1.51 (the layout has
// been the same since mutate_fd_2 was added in 1.33; build.sh pins libgrpc++-dev 1.51.1).
// mutate_fd_2 is needed: gRPC calls the old mutate_fd only for client and listener sockets, not
// for the sockets a server accepts.
typedef enum {
  GRPC_FD_CLIENT_CONNECTION_USAGE,
  GRPC_FD_SERVER_LISTENER_USAGE,
  GRPC_FD_SERVER_CONNECTION_USAGE,
} grpc_fd_usage;
typedef struct {
  int fd;
  grpc_fd_usage usage;
} grpc_mutate_socket_info;
struct grpc_socket_mutator_vtable {
  bool (*mutate_fd)(int fd, grpc_socket_mutator* mutator);
  int (*compare)(grpc_socket_mutator* a, grpc_socket_mutator* b);
  void (*destroy)(grpc_socket_mutator* mutator);
  bool (*mutate_fd_2)(const grpc_mutate_socket_info* info, grpc_socket_mutator* mutator);
};
struct grpc_socket_mutator {
  const grpc_socket_mutator_vtable* vtable;
  gpr_refcount refcount;
};
void grpc_socket_mutator_init(grpc_socket_mutator* mutator, const grpc_socket_mutator_vtable* vtable);

// --- The TLS policy -------------------------------------------------------------------------------
// gRPC 1.51's TLS layer (tsi over OpenSSL 3) offers no API for TLS versions or key exchange groups,
// and it restricts the groups to P-256 (SSL_CTX_set_tmp_ecdh with a prime256v1 key),
// which cannot handshake with a peer that allows X25519 only (the Rust peer). Every such setting
// reaches OpenSSL as SSL_CTX_ctrl(); this definition takes precedence over libssl's for the whole
// process (the executable exports it, see CMakeLists.txt) and rewrites, for every context gRPC
// creates: the groups to X25519 only, the minimum version to TLS 1.3, and turns session tickets
// off. Everything else goes to libssl's SSL_CTX_ctrl unchanged. The effect is checked on the wire
// by test/tls_policy.sh (openssl s_client).
namespace {
using CtrlFn = long (*)(SSL_CTX*, int, long, void*);
CtrlFn real_ctrl() {
  static CtrlFn fn = reinterpret_cast<CtrlFn>(dlsym(RTLD_NEXT, "SSL_CTX_ctrl"));
  return fn;
}
}  // namespace

extern "C" long SSL_CTX_ctrl(SSL_CTX* ctx, int cmd, long larg, void* parg) {
  CtrlFn real = real_ctrl();
  switch (cmd) {
    case SSL_CTRL_SET_TMP_ECDH:  // what gRPC 1.51 calls (with a P-256 key)
    case SSL_CTRL_SET_GROUPS:
    case SSL_CTRL_SET_GROUPS_LIST: {
      static const int x25519[] = {NID_X25519};
      long rc = real(ctx, SSL_CTRL_SET_GROUPS, 1, const_cast<int*>(x25519));
      SSL_CTX_set_num_tickets(ctx, 0);
      SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET);
      return rc;
    }
    case SSL_CTRL_SET_MIN_PROTO_VERSION:
      return real(ctx, cmd, TLS1_3_VERSION, parg);
    default:
      return real(ctx, cmd, larg, parg);
  }
}

namespace rpcarena {

namespace {

bool mutate(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  set_cubic(fd);
  return true;
}
bool mutate_fd(int fd, grpc_socket_mutator*) { return mutate(fd); }
bool mutate_fd_2(const grpc_mutate_socket_info* info, grpc_socket_mutator*) {
  // a client's connections are the ones its transport statistics read
  if (info->usage == GRPC_FD_CLIENT_CONNECTION_USAGE) tcp_sockets::add(info->fd);
  return mutate(info->fd);
}
int compare(grpc_socket_mutator* a, grpc_socket_mutator* b) { return a == b ? 0 : (a < b ? -1 : 1); }
void destroy(grpc_socket_mutator*) {}  // static lifetime
const grpc_socket_mutator_vtable kVtable = {mutate_fd, compare, destroy, mutate_fd_2};

grpc_socket_mutator* mutator() {
  static grpc_socket_mutator* m = [] {
    auto* created = new grpc_socket_mutator;
    grpc_socket_mutator_init(created, &kVtable);
    return created;
  }();
  return m;
}

// The server side has no SetSocketMutator; a builder option adds it to the server's arguments.
class MutatorOption : public grpc::ServerBuilderOption {
 public:
  void UpdateArguments(grpc::ChannelArguments* args) override { args->SetSocketMutator(mutator()); }
  void UpdatePlugins(std::vector<std::unique_ptr<grpc::ServerBuilderPlugin>>*) override {}
};

// Cubic is settable when privileged or allowed for everyone by the host.
bool cubic_settable() {
  if (geteuid() == 0) return true;
  std::ifstream f("/proc/sys/net/ipv4/tcp_allowed_congestion_control");
  std::string word;
  while (f >> word) {
    if (word == "cubic") return true;
  }
  return false;
}

}  // namespace

void grpc_install_tls_policy() {
  // Nothing to do at run time: the SSL_CTX_ctrl definition above is the policy. This function
  // exists so that linking the gRPC code pulls this object file (and that definition) in.
}

grpc::ChannelArguments grpc_client_arguments(const std::string& server_name) {
  grpc_install_tls_policy();
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_HTTP2_BDP_PROBE, 0);
  args.SetInt(GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES, kGrpcWindow);
  args.SetInt(GRPC_ARG_HTTP2_MAX_FRAME_SIZE, 16384);
  args.SetMaxReceiveMessageSize(static_cast<int>(kMaxMessageBytes));
  args.SetMaxSendMessageSize(static_cast<int>(kMaxMessageBytes));
  if (!server_name.empty()) args.SetSslTargetNameOverride(server_name);  // empty: --tls off
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  args.SetLoadBalancingPolicyName("pick_first");
  args.SetInt(GRPC_ARG_ENABLE_RETRIES, 0);
  args.SetSocketMutator(mutator());
  return args;
}

void grpc_configure_server(grpc::ServerBuilder& builder) {
  grpc_install_tls_policy();
  builder.AddChannelArgument(GRPC_ARG_HTTP2_BDP_PROBE, 0);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES, kGrpcWindow);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_FRAME_SIZE, 16384);
  builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS, kGrpcMaxStreams);
  builder.SetMaxReceiveMessageSize(static_cast<int>(kMaxMessageBytes));
  builder.SetMaxSendMessageSize(static_cast<int>(kMaxMessageBytes));
  builder.SetOption(std::make_unique<MutatorOption>());
}

GrpcDeclared grpc_declared() {
  GrpcDeclared d;
  d.congestion = cubic_settable() ? "cubic" : "host default";
  // Seen with GRPC_TRACE=http,flowctl: SETTINGS_INITIAL_WINDOW_SIZE is 16777216 (the lookahead
  // argument), but the connection window stays at HTTP/2's initial 65535 and grows only as data
  // arrives ("t_win=0" stalls while sending a 1 MB message).
  d.deviations.push_back(
      "HTTP/2 connection window: 16777216 required; gRPC core 1.51 keeps the initial 65535 and "
      "raises it only as data arrives (no channel argument sets it), so a large message stalls on "
      "connection flow control");
  if (d.congestion != "cubic") {
    d.deviations.push_back(
        "TCP congestion control: cubic required, the host default is used (TCP_CONGESTION cubic "
        "is neither privileged nor in net.ipv4.tcp_allowed_congestion_control here)");
  }
  return d;
}

}  // namespace rpcarena
