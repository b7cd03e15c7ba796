package rpcarena.peer

import kotlin.test.Test
import kotlin.test.assertEquals
import kotlin.test.assertFailsWith
import kotlin.test.assertTrue

// stdin commands (revision 1.2 adds WINDOW START and WINDOW END), the `window` event's fields
// (1.3: the commands counter and first_rejection, tested in PlaintextSendTest),
// and the client's refusal of the server-only pingpong shape.
class WindowCommandTest {
    @Test
    fun linesAreClassifiedWithSurroundingWhitespaceIgnored() {
        assertEquals(Pair(Cmd.WINDOW_START, "WINDOW START"), parseCommand("  WINDOW START\r"))
        assertEquals(Pair(Cmd.WINDOW_END, "WINDOW END"), parseCommand("WINDOW END"))
        assertEquals(Pair(Cmd.START, "START"), parseCommand("\tSTART "))
        assertEquals(Pair(Cmd.SHUTDOWN, "SHUTDOWN"), parseCommand("SHUTDOWN"))
        assertEquals(Pair(Cmd.SHUTDOWN, "end of stdin"), parseCommand(null))
        for (line in listOf("WINDOW  START", "window end", "WINDOW", "WINDOW MIDDLE", "")) {
            assertEquals(Cmd.OTHER, parseCommand(line).first, line)
        }
        assertEquals("WINDOW END", describe(Cmd.WINDOW_END, "WINDOW END"))
        assertEquals("unknown command \"WINDOW  END\"", describe(Cmd.OTHER, "WINDOW  END"))
    }

    @Test
    fun aWindowEventCarriesTheEdgeTheCountersAndTheAllocatedBytesSoFar() {
        ServerCounters.rpcs.addAndGet(3)
        val start = windowFields("start")
        // first_rejection (revision 1.3) only once another test here made a server reject something.
        val rejection = if (ServerCounters.firstRejection() != null) listOf("first_rejection") else emptyList()
        assertEquals(listOf("edge", "counters") + rejection + "allocated_bytes", start.keys.toList())
        assertEquals("start", start["edge"])
        val counters = start["counters"] as Map<*, *>
        assertEquals(listOf("rpcs", "requests", "responses", "rejected", "commands"), counters.keys.toList())
        ServerCounters.rpcs.incrementAndGet()
        ByteArray(1 shl 20).also { Blackhole.keep = it }
        val end = windowFields("end")
        assertEquals("end", end["edge"])
        val rpcs = { m: Map<String, Any> -> (m["counters"] as Map<*, *>)["rpcs"].toString().toLong() }
        assertTrue(rpcs(end) > rpcs(start))
        val bytes = { m: Map<String, Any> -> m["allocated_bytes"].toString().toLong() }
        assertTrue(bytes(end) - bytes(start) >= 1 shl 20, "${bytes(start)} then ${bytes(end)}")
        assertTrue(Json.encode(end).startsWith("{\"edge\":\"end\",\"counters\":{\"rpcs\":\""), Json.encode(end))
    }

    @Test
    fun theClientRefusesPingpongNamingTheShape() {
        val argv = listOf(
            "--stack", "grpc", "--server", "127.0.0.1:1", "--server-name", "127.0.0.1", "--ca", "ca.pem",
            "--shape", "pingpong", "--concurrency", "1", "--request-size", "8", "--response-size", "8",
            "--messages-per-stream", "4", "--load", "closed", "--warmup-ms", "0", "--window-ms", "1", "--drain-ms", "1",
        )
        val e = assertFailsWith<ArgError> { parseClient(argv) }
        assertTrue(e.message!!.startsWith("--shape pingpong: this client does not drive the pingpong shape"), e.message)
        assertEquals("bidi", parseClient(argv.map { if (it == "pingpong") "bidi" else it }).shape)
        assertEquals(SHAPES + "pingpong", SERVER_SHAPES)
    }
}

/** Keeps an allocation reachable so that the JIT cannot remove it. */
object Blackhole {
    @Volatile
    var keep: Any? = null
}
