package rpcarena.peer

import java.net.BindException
import java.net.InetSocketAddress

// The server role: load the certificate and key, bind --listen, print ready, serve until SHUTDOWN
// or the end of stdin.

object ServerRole {
    fun run(cfg: ServerConfig) {
        val stop: () -> Unit
        val bound: InetSocketAddress
        try {
            when (cfg.stack) {
                "grpc" -> {
                    val s = GrpcServer(cfg)
                    bound = try { s.start() } catch (e: Exception) { throw ListenFailure(e) }
                    stop = { s.stop() }
                }
                "quic" -> {
                    val s = QuicServer(cfg)
                    bound = try { s.start() } catch (e: Exception) { throw ListenFailure(e) }
                    stop = { s.stop() }
                }
                else -> Exit.error("startup", "config", "--stack ${cfg.stack}: the kotlin peer does not serve this stack")
            }
        } catch (e: ArgError) {
            Exit.error("startup", "config", e.message ?: "")
        } catch (e: ListenFailure) {
            val why = if (e.cause is BindException || e.cause?.cause is BindException) "cannot bind" else "cannot listen"
            Exit.error("listen", "config", "--listen ${cfg.listen}: $why (${causeText(e.cause!!)})")
        }
        val host = bound.address.hostAddress.substringBefore('%')
        val address = if (host.contains(':')) "[$host]:${bound.port}" else "$host:${bound.port}"
        Events.emit("ready", mapOf("role" to "server", "address" to address, "pid" to ProcessHandle.current().pid()))
        val stdin = Stdin { cmd, text ->
            if (cmd == Cmd.SHUTDOWN) {
                stop()
                Exit.stopped(ServerCounters.asMap())
            }
            Exit.error("serve", "protocol", "${describe(cmd, text)} sent to a server")
        }
        stdin.start()
        while (true) Thread.sleep(60_000)
    }
}

class ListenFailure(cause: Throwable) : Exception(cause)
