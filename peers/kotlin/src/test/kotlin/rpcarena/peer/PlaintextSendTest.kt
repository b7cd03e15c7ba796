package rpcarena.peer

import io.grpc.Status
import io.grpc.StatusException
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.awaitCancellation
import kotlinx.coroutines.delay
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withContext
import rpcarena.bench.v1.Bench.Empty
import java.util.concurrent.atomic.AtomicInteger
import kotlin.test.Test
import kotlin.test.assertEquals
import kotlin.test.assertFailsWith
import kotlin.test.assertFalse
import kotlin.test.assertNotNull
import kotlin.test.assertNull
import kotlin.test.assertTrue

// Revision 1.3 on grpc: plaintext (h2c) both ends, the one-way `Command` RPC (validated, counted
// in `commands`, rejections explained by `first_rejection`), send-saturation on `send`, and what
// `capabilities` says about both.
class PlaintextSendTest {
    private fun clientArgs(port: Int, shape: String, load: List<String>, windowMs: Int = 200) = listOf(
        "--stack", "grpc", "--server", "127.0.0.1:$port", "--tls", "off", "--shape", shape,
        "--concurrency", "2", "--request-size", "16", "--response-size", "0", "--messages-per-stream", "3",
        "--warmup-ms", "0", "--window-ms", "$windowMs", "--drain-ms", "1000",
    ) + load

    @Test
    fun aPlaintextGrpcServerAndClientCarryUnaryBidiAndSend() = runBlocking {
        val server = GrpcServer(parseServer(listOf("--stack", "grpc", "--listen", "127.0.0.1:0", "--tls", "off")))
        val port = server.start().port
        try {
            for (shape in listOf("unary", "bidi", "send")) {
                val client = GrpcClient(parseClient(clientArgs(port, shape, listOf("--load", "closed"))))
                try {
                    withContext(Dispatchers.Default) { client.connect(20_000) }
                    val commands = ServerCounters.commands.get()
                    val rpcs = ServerCounters.rpcs.get()
                    client.operation(1)
                    client.operation(2)
                    assertEquals(rpcs + 2, ServerCounters.rpcs.get(), shape)
                    assertEquals(commands + if (shape == "send") 2 else 0, ServerCounters.commands.get(), shape)
                } finally {
                    client.close()
                }
            }
        } finally {
            server.stop()
        }
    }

    @Test
    fun theCommandHandlerValidatesCountsAndRejectsWithTheReason() = runBlocking {
        val service = GrpcService()
        val w = Workload(false, 16, 0, 1)
        val commands = ServerCounters.commands.get()
        val responses = ServerCounters.responses.get()
        val rejected = ServerCounters.rejections.count.get()
        assertEquals(Empty.getDefaultInstance(), service.command(w.request(5)))
        assertEquals(commands + 1, ServerCounters.commands.get())
        assertEquals(responses + 1, ServerCounters.responses.get(), "the Empty is a response message")

        val asksForBytes = w.request(6).toBuilder().setResponseSize(5).build()
        val e = assertFailsWith<StatusException> { service.command(asksForBytes) }
        assertEquals(Status.Code.INVALID_ARGUMENT, e.status.code)
        assertEquals("command 6: response_size 5, expected 0 (a command gets no response)", e.status.description)
        val nonZero = w.request(7).toBuilder().setPayload(com.google.protobuf.ByteString.copyFrom(byteArrayOf(0, 1))).build()
        val e2 = assertFailsWith<StatusException> { service.command(nonZero) }
        assertEquals("command 7: payload has a non-zero byte", e2.status.description)

        assertEquals(commands + 1, ServerCounters.commands.get(), "a rejected command is not counted in commands")
        assertEquals(responses + 1, ServerCounters.responses.get(), "nor in responses")
        assertEquals(rejected + 2, ServerCounters.rejections.count.get())
        val window = windowFields("end")
        assertEquals(listOf("edge", "counters", "first_rejection"), window.keys.toList().take(3))
        assertEquals(ServerCounters.firstRejection(), window["first_rejection"])
        assertEquals("${commands + 1}", (window["counters"] as Map<*, *>)["commands"].toString())
    }

    @Test
    fun theFirstRejectionIsKeptOnOneLineAndOnlyOnceSomethingWasRejected() {
        val r = Rejections()
        assertNull(r.first())
        r.reject("grpc Command: bad\nthing")
        r.reject("grpc Unary: later")
        assertEquals("grpc Command: bad thing", r.first())
        assertEquals(2, r.count.get())
    }

    /** A stack whose operations take 2 ms; [fail] and [hang] pick the seqs that fail or never end. */
    private class FakeStack(val fail: Long = -1, val hang: Long = -1) : ClientStack {
        override val connections = 1
        val inFlight = AtomicInteger()
        val most = AtomicInteger()

        override suspend fun operation(seq: Long) {
            most.accumulateAndGet(inFlight.incrementAndGet(), ::maxOf)
            try {
                if (seq == hang) awaitCancellation()
                delay(2)
                if (seq == fail) throw OpFailure("rpc", "status INVALID_ARGUMENT: command $seq")
            } finally {
                inFlight.decrementAndGet()
            }
        }

        override suspend fun saturate(deadline: Long, accepted: (Long) -> Unit): Long = error("send has no client streams")

        override fun close() {}
    }

    @Test
    fun sendSaturationRunsOneCommandPerLaneAndPrintsSentWithoutReceived() = runBlocking {
        val sat = listOf("--load", "send-saturation", "--streams", "3", "--settle-ms", "500")
        val cfg = parseClient(clientArgs(1, "send", sat))
        val stack = FakeStack(fail = 4)
        val t0 = System.nanoTime()
        val r = withContext(Dispatchers.Default) { Engine(cfg, stack).run(t0, 200_000_000L, 1_000_000_000L) }
        val t = r.tally
        assertNull(r.received)
        assertEquals(3, r.maxInFlight)
        assertEquals(3, stack.most.get(), "one command in flight per lane, three lanes")
        assertTrue(t.completed > 10, "${t.completed} completed")
        assertEquals(1, t.failed, "the lane that failed stopped")
        assertEquals(t.completed + t.failed, r.sent)
        assertEquals(t.completed, t.requests)
        assertEquals(t.completed, t.responses, "every acknowledgement is a response")
        assertEquals(t.completed * 16, t.requestBytes)
        assertEquals(0, t.responseBytes)
        val sample = ClientRole.sampleFields(cfg, r, 200_000_000L, 1_000_000_000L, t0)
        assertFalse("received" in sample)
        assertEquals("${r.sent}", sample["sent"].toString())
        assertEquals("3", sample["max_in_flight"].toString())
        assertEquals("send-saturation", sample["load"])
        assertEquals("1", (sample["failures"] as Map<*, *>)["rpc"].toString())
    }

    @Test
    fun aCommandStillOutstandingAtTheSettleBoundFailsWithTimeout() = runBlocking {
        val sat = listOf("--load", "send-saturation", "--streams", "2", "--settle-ms", "50")
        val cfg = parseClient(clientArgs(1, "send", sat, windowMs = 100))
        val t0 = System.nanoTime()
        val r = withContext(Dispatchers.Default) { Engine(cfg, FakeStack(hang = 3)).run(t0, 100_000_000L, 5_000_000_000L) }
        val took = (System.nanoTime() - t0) / 1_000_000
        assertEquals(mapOf("timeout" to 1L), r.tally.failures)
        assertTrue(took < 1_000, "the settle bound (50 ms), not the drain bound (5 s), ended it: $took ms")
        val sample = ClientRole.sampleFields(cfg, r, 100_000_000L, 5_000_000_000L, t0)
        assertTrue(sample["drain_ns"].toString().toLong() <= 50_000_000L, "drain_ns ${sample["drain_ns"]}")
    }

    @Test
    fun capabilitiesSayWhichTlsValuesEachStackTakesAndWhyQuicHasNoSend() {
        val grpc = Capabilities.entry("grpc", client = false)
        assertEquals(listOf("on", "off"), grpc["tls"])
        assertEquals(SERVER_SHAPES + "send", grpc["shapes"])
        assertFalse("not_offered" in grpc)
        val quic = Capabilities.entry("quic", client = true)
        assertEquals(listOf("on"), quic["tls"])
        assertEquals(SHAPES, quic["shapes"])
        val why = assertNotNull((quic["not_offered"] as Map<*, *>)["send"]) as String
        assertTrue(why.startsWith("the native framing answers every request"), why)
        assertTrue(Json.encode(quic).contains("\"not_offered\":{\"send\":\"the native framing"))
    }
}
