package rpcarena.peer

import io.netty.buffer.ByteBuf
import io.netty.buffer.Unpooled
import io.netty.channel.embedded.EmbeddedChannel
import kotlinx.coroutines.channels.Channel
import kotlinx.coroutines.flow.consumeAsFlow
import kotlinx.coroutines.launch
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withTimeout
import rpcarena.bench.v1.Bench.Response
import kotlin.test.Test
import kotlin.test.assertEquals
import kotlin.test.assertNotNull

// pingpong (revision 1.2) is the Bidi RPC driven in lock-step: request i+1 is sent only after
// response i arrived. A server lists it only when its bidi handler answers each request as it
// comes; a handler that read ahead would leave these tests waiting for a response.
class PingpongTest {
    private val w = Workload(true, 64, 80, 8)

    @Test
    fun theGrpcBidiHandlerAnswersEachRequestBeforeTheNext() = runBlocking {
        val requests = Channel<rpcarena.bench.v1.Bench.Request>()
        val responses = Channel<Response>(Channel.UNLIMITED)
        val call = launch { GrpcService().bidi(requests.consumeAsFlow()).collect { responses.send(it) } }
        for (i in 0L until 8L) {
            requests.send(w.request(i))
            val r = withTimeout(2_000) { responses.receive() }
            w.checkResponse(r, i, "response $i")
        }
        requests.close()
        call.join()
        assertEquals(null, responses.tryReceive().getOrNull())
    }

    private fun frame(type: Int, body: ByteArray): ByteBuf = Unpooled.buffer().also { writeFrame(it, type, body) }

    @Test
    fun theQuicServerCallFlushesEachBidiResponseBeforeTheNextRequest() {
        val ch = EmbeddedChannel(FrameDecoder(), ServerCall())
        ch.writeInbound(frame(F_HEADER, METHODS.getValue("bidi").toByteArray()))
        for (i in 0L until 8L) {
            ch.writeInbound(frame(F_MESSAGE, w.request(i).toByteArray()))
            val out = assertNotNull(ch.readOutbound<ByteBuf>(), "no response to request $i before request ${i + 1}")
            assertEquals(F_MESSAGE, out.readUnsignedByte().toInt())
            val body = ByteArray(out.readInt()).also { out.readBytes(it) }
            out.release()
            w.checkResponse(Response.parseFrom(body), i, "response $i")
            assertEquals(null, ch.readOutbound<ByteBuf>())
        }
        ch.finishAndReleaseAll()
    }
}
