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

    /** Prints `stopped` with [fields] (a server's counters and allocated bytes; none for a client). */
    fun stopped(fields: Map<String, Any> = emptyMap()): Nothing {
        Events.emit("stopped", fields)
        now(0)
    }
}

/** The commands of stdin; the window commands (revision 1.2) go to servers only. */
enum class Cmd { START, SHUTDOWN, WINDOW_START, WINDOW_END, OTHER }

/**
 * One line of stdin, surrounding whitespace ignored, the two words of a window command separated
 * by one space; null (the end of stdin) means SHUTDOWN. The text is what [describe] names.
 */
fun parseCommand(line: String?): Pair<Cmd, String> {
    val text = line?.trim() ?: return Pair(Cmd.SHUTDOWN, "end of stdin")
    val cmd = when (text) {
        "START" -> Cmd.START
        "SHUTDOWN" -> Cmd.SHUTDOWN
        "WINDOW START" -> Cmd.WINDOW_START
        "WINDOW END" -> Cmd.WINDOW_END
        else -> Cmd.OTHER
    }
    return Pair(cmd, text)
}

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
                val item = parseCommand(line)
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
    Cmd.START, Cmd.SHUTDOWN, Cmd.WINDOW_START, Cmd.WINDOW_END -> text
    Cmd.OTHER -> "unknown command \"${text.take(200)}\""
}
