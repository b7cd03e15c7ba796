package rpcarena.peer

import java.net.BindException
import java.net.InetSocketAddress

// The server role: load the certificate and key, bind --listen, print ready, serve until SHUTDOWN
// or the end of stdin. WINDOW START and WINDOW END (revision 1.2) are answered at once, on the
// stdin thread, with a `window` event; serving goes on.

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
            when (cmd) {
                Cmd.WINDOW_START -> Events.emit("window", windowFields("start"))
                Cmd.WINDOW_END -> Events.emit("window", windowFields("end"))
                Cmd.SHUTDOWN -> {
                    stop()
                    Exit.stopped(counterFields())
                }
                Cmd.START, Cmd.OTHER -> Exit.error(
                    "serve",
                    "protocol",
                    "${describe(cmd, text)} sent to a server (it takes SHUTDOWN, WINDOW START and WINDOW END)",
                )
            }
            true
        }
        stdin.start()
        while (true) Thread.sleep(60_000)
    }
}

class ListenFailure(cause: Throwable) : Exception(cause)

/**
 * The server's counters so far, the first rejection's message once something was rejected
 * (revision 1.3) and, when the JVM counts them, the bytes allocated so far.
 */
fun counterFields(): Map<String, Any> {
    val m = linkedMapOf<String, Any>("counters" to ServerCounters.asMap())
    ServerCounters.firstRejection()?.let { m["first_rejection"] = it }
    return m + Allocations.sinceStart()
}

/** A `window` event's fields (revision 1.2): the edge answered and the figures so far. */
fun windowFields(edge: String): Map<String, Any> = linkedMapOf<String, Any>("edge" to edge) + counterFields()
