package rpcarena.peer

import java.io.PrintStream
import java.io.FileOutputStream
import java.io.FileDescriptor

// Events on stdout (docs/peer-protocol.md "Events"): one JSON object per line, flushed, every
// event with "protocol": 1, counters as decimal strings, never null. The JSON writer is a few
// lines: values are strings, numbers, booleans, lists and maps.

/** A counter: a JSON string of decimal digits. */
class Counter(val value: Long) {
    override fun toString() = java.lang.Long.toUnsignedString(value)
}

object Json {
    fun quote(s: String, out: StringBuilder) {
        out.append('"')
        for (ch in s) {
            when {
                ch == '"' -> out.append("\\\"")
                ch == '\\' -> out.append("\\\\")
                ch == '\n' -> out.append("\\n")
                ch == '\r' -> out.append("\\r")
                ch == '\t' -> out.append("\\t")
                ch < ' ' -> out.append(String.format("\\u%04x", ch.code))
                else -> out.append(ch)
            }
        }
        out.append('"')
    }

    fun write(v: Any?, out: StringBuilder) {
        when (v) {
            null -> error("null is never valid in an event")
            is String -> quote(v, out)
            is Counter -> quote(v.toString(), out)
            is Boolean -> out.append(v)
            is Int, is Long -> out.append(v)
            is Double -> {
                if (v == Math.floor(v) && Math.abs(v) < 1e15) out.append(v.toLong()) else out.append(v)
            }
            is Map<*, *> -> {
                out.append('{')
                var first = true
                for ((k, x) in v) {
                    if (x == null) continue
                    if (!first) out.append(',')
                    first = false
                    quote(k.toString(), out)
                    out.append(':')
                    write(x, out)
                }
                out.append('}')
            }
            is Iterable<*> -> {
                out.append('[')
                var first = true
                for (x in v) {
                    if (!first) out.append(',')
                    first = false
                    write(x, out)
                }
                out.append(']')
            }
            else -> error("cannot write ${v::class} as JSON")
        }
    }

    fun encode(v: Any?): String = StringBuilder().also { write(v, it) }.toString()
}

/** stdout, used only for events. System.out is pointed at stderr so that no library prints here. */
object Events {
    private val out = PrintStream(FileOutputStream(FileDescriptor.out), false, "UTF-8")

    init {
        System.setOut(System.err)
    }

    @Synchronized
    fun emit(kind: String, fields: Map<String, Any?> = emptyMap()) {
        val m = LinkedHashMap<String, Any?>()
        m["protocol"] = 1
        m["event"] = kind
        m.putAll(fields)
        out.print(Json.encode(m))
        out.print('\n')
        out.flush()
    }

    fun error(phase: String, code: String, message: String) {
        emit("error", mapOf("phase" to phase, "code" to code, "message" to message.replace('\n', ' ')))
    }
}

fun log(msg: String) {
    System.err.println("rpcarena-peer-kotlin: $msg")
    System.err.flush()
}
