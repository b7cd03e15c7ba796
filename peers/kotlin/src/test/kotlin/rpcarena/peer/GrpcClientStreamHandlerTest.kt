package rpcarena.peer

import io.grpc.Metadata
import io.grpc.MethodDescriptor
import io.grpc.ServerCall
import io.grpc.Status
import rpcarena.bench.v1.Bench.Request
import rpcarena.bench.v1.Bench.Summary
import rpcarena.bench.v1.BenchServiceGrpc
import kotlin.test.Test
import kotlin.test.assertEquals
import kotlin.test.assertTrue

/** A call that records what the handler asks of the transport and what it answers. */
private class RecordingCall : ServerCall<Request, Summary>() {
    var requested = 0L
    val requests = mutableListOf<Int>()
    val sent = mutableListOf<Summary>()
    var status: Status? = null

    override fun request(numMessages: Int) {
        requests.add(numMessages)
        requested += numMessages
    }
    override fun sendHeaders(headers: Metadata) {}
    override fun sendMessage(message: Summary) {
        sent.add(message)
    }
    override fun close(status: Status, trailers: Metadata) {
        this.status = status
    }
    override fun isCancelled() = false
    override fun getMethodDescriptor(): MethodDescriptor<Request, Summary> = BenchServiceGrpc.getClientStreamMethod()
}

class GrpcClientStreamHandlerTest {
    /** Delivers [n] requests as the transport would: only while the handler has asked for them. */
    private fun stream(w: Workload, n: Long): RecordingCall {
        val call = RecordingCall()
        val listener = GrpcClientStreamHandler().startCall(call, Metadata())
        for (k in 0 until n) {
            assertTrue(call.requested > k, "message $k delivered before it was requested")
            assertTrue(call.requested - k <= 256, "more than 256 messages requested ahead at message $k")
            listener.onMessage(w.request(k))
        }
        listener.onHalfClose()
        return call
    }

    @Test
    fun smallMessagesAreRequestedInBatchesAndSummarized() {
        val call = stream(Workload(false, 64, 64, 1), 10_000)
        assertEquals(Status.Code.OK, call.status?.code)
        val s = call.sent.single()
        assertEquals(Triple(10_000L, 640_000L, 9_999L), Triple(s.count, s.payloadBytes, s.lastSeq))
        // one request(1) to start, then a request per 128 messages, not one per message
        assertTrue(call.requests.size < 10_000 / 100, "${call.requests.size} requests for 10,000 messages")
    }

    @Test
    fun largeMessagesAreRequestedOneAtATime() {
        val call = stream(Workload(false, 2 shl 20, 0, 1), 5)
        assertEquals(listOf(1, 1, 1, 1, 1, 1), call.requests)
        assertEquals(5L, call.sent.single().count)
    }

    @Test
    fun aBadRequestIsRefusedAndTheRestIgnored() {
        val call = RecordingCall()
        val w = Workload(true, 64, 64, 1)
        val listener = GrpcClientStreamHandler().startCall(call, Metadata())
        listener.onMessage(w.request(0))
        listener.onMessage(w.request(5))
        listener.onMessage(w.request(2))
        listener.onHalfClose()
        assertEquals(Status.Code.INVALID_ARGUMENT, call.status?.code)
        assertTrue(call.status?.description!!.contains("seq 5, expected 1"), call.status?.description)
        assertTrue(call.sent.isEmpty())
    }

    @Test
    fun anEmptyStreamIsRefused() {
        val call = RecordingCall()
        GrpcClientStreamHandler().startCall(call, Metadata()).onHalfClose()
        assertEquals(Status.Code.INVALID_ARGUMENT, call.status?.code)
    }

    @Test
    fun batchesHoldAtMostAMebibyte() {
        assertEquals(256, creditBatch(64))
        assertEquals(16, creditBatch(65_536))
        assertEquals(1, creditBatch(16 shl 20))
        assertEquals(256, creditBatch(0))
    }
}
