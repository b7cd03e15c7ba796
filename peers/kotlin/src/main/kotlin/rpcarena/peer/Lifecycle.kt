package rpcarena.peer

import java.io.BufferedReader
import java.io.InputStreamReader
import java.util.concurrent.LinkedBlockingQueue

// stdin commands and the lifecycle of both roles (docs/peer-protocol.md "Lifecycle"). A reader
// thread reads stdin from the start; what a line means depends on the phase the role is in.

object Exit {
    /** Ends the process at once: events are already flushed; no shutdown hook may block. */
    fun now(code: Int): Nothing {
        System.err.flush()
        Runtime.getRuntime().halt(code)
        throw IllegalStateException("unreachable")
    }

    fun error(phase: String, code: String, message: String): Nothing {
        Events.error(phase, code, message)
        now(if (phase == "startup" && code == "config") 2 else 1)
    }

    fun stopped(counters: Map<String, Any>? = null): Nothing {
        Events.emit("stopped", if (counters != null) mapOf("counters" to counters) else emptyMap())
        now(0)
    }
}

enum class Cmd { START, SHUTDOWN, OTHER }

/**
 * Reads stdin on its own thread. [onLine] decides what a command means in the current phase;
 * commands it does not handle at once are queued for [next].
 */
class Stdin(private val onLine: (Cmd, String) -> Boolean) {
    private val queue = LinkedBlockingQueue<Pair<Cmd, String>>()

    fun start() {
        val t = Thread({
            val r = BufferedReader(InputStreamReader(System.`in`, Charsets.UTF_8))
            while (true) {
                val line = try { r.readLine() } catch (e: Exception) { null }
                val item = when {
                    line == null -> Pair(Cmd.SHUTDOWN, "end of stdin")
                    line.trim() == "START" -> Pair(Cmd.START, "START")
                    line.trim() == "SHUTDOWN" -> Pair(Cmd.SHUTDOWN, "SHUTDOWN")
                    else -> Pair(Cmd.OTHER, line.trim())
                }
                if (!onLine(item.first, item.second)) queue.put(item)
                if (line == null) break
            }
        }, "stdin")
        t.isDaemon = true
        t.start()
    }

    fun next(): Pair<Cmd, String> = queue.take()
}

fun describe(cmd: Cmd, text: String) = when (cmd) {
    Cmd.START -> "START"
    Cmd.SHUTDOWN -> text
    Cmd.OTHER -> "unknown command \"${text.take(200)}\""
}
