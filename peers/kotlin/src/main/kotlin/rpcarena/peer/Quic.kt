package rpcarena.peer

import com.google.protobuf.MessageLite
import io.netty.bootstrap.Bootstrap
import io.netty.buffer.ByteBuf
import io.netty.buffer.ByteBufOutputStream
import io.netty.buffer.Unpooled
import io.netty.channel.Channel
import io.netty.channel.ChannelFuture
import io.netty.channel.ChannelHandler
import io.netty.channel.ChannelHandlerContext
import io.netty.channel.ChannelInboundHandlerAdapter
import io.netty.channel.ChannelInitializer
import io.netty.channel.ChannelOption
import io.netty.channel.MultiThreadIoEventLoopGroup
import io.netty.channel.nio.NioIoHandler
import io.netty.channel.socket.ChannelInputShutdownEvent
import io.netty.channel.socket.nio.NioDatagramChannel
import io.netty.handler.codec.ByteToMessageDecoder
import io.netty.handler.codec.quic.BoringSSLContextOption
import io.netty.handler.codec.quic.QuicChannel
import io.netty.handler.codec.quic.QuicClientCodecBuilder
import io.netty.handler.codec.quic.QuicCongestionControlAlgorithm
import io.netty.handler.codec.quic.QuicServerCodecBuilder
import io.netty.handler.codec.quic.QuicSslContextBuilder
import io.netty.handler.codec.quic.QuicStreamChannel
import io.netty.handler.codec.quic.QuicStreamType
import io.netty.util.concurrent.Future
import kotlinx.coroutines.channels.Channel as KChannel
import kotlinx.coroutines.delay
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.suspendCancellableCoroutine
import kotlinx.coroutines.withTimeout
import rpcarena.bench.v1.Bench.Request
import rpcarena.bench.v1.Bench.Response
import rpcarena.bench.v1.Bench.Status
import rpcarena.bench.v1.Bench.Summary
import java.net.DatagramSocket
import java.net.InetSocketAddress
import java.util.concurrent.ConcurrentHashMap
import java.util.concurrent.TimeUnit
import kotlin.coroutines.resume
import kotlin.coroutines.resumeWithException

// The quic stack: the native framing of docs/stacks.md on Netty's QUIC codec (quiche and
// BoringSSL), one connection per client, one bidirectional stream per call. Settings: ALPN
// rpcarena/1, X25519 only, no early data, 16 MiB stream and connection windows, 10,000 bidi
// streams (server), no uni streams, Cubic, 30 s idle timeout, 8 MiB UDP buffers.

const val UDP_BUFFER = 8 * 1024 * 1024
const val ALPN = "rpcarena/1"

const val F_HEADER = 1
const val F_MESSAGE = 2
const val F_END = 3
const val F_STATUS = 4

val METHODS = mapOf(
    "unary" to "/rpcarena.bench.v1.BenchService/Unary",
    "client_stream" to "/rpcarena.bench.v1.BenchService/ClientStream",
    "server_stream" to "/rpcarena.bench.v1.BenchService/ServerStream",
    "bidi" to "/rpcarena.bench.v1.BenchService/Bidi",
)

class Frame(val type: Int, val body: ByteArray)
object Fin
class StreamError(val code: String, val message: String)

/** Broken framing: the stream cannot be read further. */
class FrameError(message: String) : Exception(message)

fun writeFrame(buf: ByteBuf, type: Int, msg: MessageLite?) {
    buf.writeByte(type)
    if (msg == null) {
        buf.writeInt(0)
        return
    }
    buf.writeInt(msg.serializedSize)
    msg.writeTo(ByteBufOutputStream(buf))
}

fun writeFrame(buf: ByteBuf, type: Int, body: ByteArray) {
    buf.writeByte(type)
    buf.writeInt(body.size)
    buf.writeBytes(body)
}

/** Splits a stream into frames; refuses unknown types and oversized bodies. */
class FrameDecoder : ByteToMessageDecoder() {
    override fun decode(ctx: ChannelHandlerContext, inb: ByteBuf, out: MutableList<Any>) {
        while (inb.readableBytes() >= 5) {
            val at = inb.readerIndex()
            val type = inb.getUnsignedByte(at).toInt()
            val len = inb.getUnsignedInt(at + 1)
            if (type < F_HEADER || type > F_STATUS) throw FrameError("unknown frame type $type")
            if (len > MAX_FRAME) throw FrameError("frame of $len bytes, above the limit of $MAX_FRAME")
            if (inb.readableBytes() < 5 + len) return
            inb.skipBytes(5)
            val body = ByteArray(len.toInt())
            inb.readBytes(body)
            out.add(Frame(type, body))
        }
    }

    override fun decodeLast(ctx: ChannelHandlerContext, inb: ByteBuf, out: MutableList<Any>) {
        decode(ctx, inb, out)
        if (inb.isReadable) {
            inb.skipBytes(inb.readableBytes())
            out.add(StreamError("connect", "the stream ended inside a frame"))
        }
    }
}

suspend fun <T> Future<T>.awaitNetty(): T = suspendCancellableCoroutine { c ->
    addListener {
        if (it.isSuccess) c.resume(it.now as T) else c.resumeWithException(it.cause())
    }
}

fun udpOptions(b: Bootstrap): Bootstrap = b
    .option(ChannelOption.SO_RCVBUF, UDP_BUFFER)
    .option(ChannelOption.SO_SNDBUF, UDP_BUFFER)

fun reportUdpBuffers(ch: Channel) {
    val rcv = ch.config().getOption(ChannelOption.SO_RCVBUF)
    val snd = ch.config().getOption(ChannelOption.SO_SNDBUF)
    if (rcv < UDP_BUFFER || snd < UDP_BUFFER) {
        log("UDP socket buffers: asked $UDP_BUFFER, the kernel granted receive $rcv and send $snd (net.core.rmem_max/wmem_max)")
    }
}

/** Delivers a client stream's frames, its FIN and its failures to the coroutine reading it. */
private class ClientStreamHandler(val inbox: KChannel<Any>) : ChannelInboundHandlerAdapter() {
    override fun channelRead(ctx: ChannelHandlerContext, msg: Any) {
        inbox.trySend(msg)
    }

    override fun userEventTriggered(ctx: ChannelHandlerContext, evt: Any) {
        if (evt is ChannelInputShutdownEvent) inbox.trySend(Fin)
        ctx.fireUserEventTriggered(evt)
    }

    override fun exceptionCaught(ctx: ChannelHandlerContext, cause: Throwable) {
        val root = if (cause is io.netty.handler.codec.DecoderException && cause.cause != null) cause.cause!! else cause
        if (root is FrameError) {
            inbox.trySend(StreamError("invalid", root.message ?: "broken framing"))
        } else {
            inbox.trySend(StreamError("connect", "stream failed: ${causeText(root)}"))
        }
        ctx.close()
    }

    override fun channelInactive(ctx: ChannelHandlerContext) {
        inbox.trySend(StreamError("connect", "the stream or connection closed before STATUS"))
    }
}

class QuicClient private constructor(
    private val cfg: ClientConfig,
    private val group: MultiThreadIoEventLoopGroup,
    private val udp: Channel,
    private val quic: QuicChannel,
) : ClientStack {
    override val connections = 1
    private val w = Workload(cfg.structured, cfg.requestSize, cfg.responseSize, cfg.messagesPerStream)
    private val n = cfg.messagesPerStream
    private val method = METHODS.getValue(cfg.shape).toByteArray()

    companion object {
        fun connect(cfg: ClientConfig, timeoutMs: Long): QuicClient {
            // --stack quic refuses --tls off (Args.kt), so the TLS arguments are always given.
            val serverName = cfg.serverName!!
            val trust = CampaignTrust(loadCa(cfg.ca!!), serverName)
            val ssl = QuicSslContextBuilder.forClient()
                .trustManager(trust)
                .applicationProtocols(ALPN)
                .option(BoringSSLContextOption.GROUPS, arrayOf("X25519"))
                .earlyData(false)
                .sessionCacheSize(0)
                .build()
            val codec = QuicClientCodecBuilder()
                .sslEngineProvider { q -> ssl.newEngine(q.alloc(), serverName, cfg.server.port) }
                .maxIdleTimeout(30_000, TimeUnit.MILLISECONDS)
                .initialMaxData(WINDOW.toLong())
                .initialMaxStreamDataBidirectionalLocal(WINDOW.toLong())
                .initialMaxStreamDataBidirectionalRemote(WINDOW.toLong())
                .initialMaxStreamDataUnidirectional(WINDOW.toLong())
                .initialMaxStreamsBidirectional(0)
                .initialMaxStreamsUnidirectional(0)
                .congestionControlAlgorithm(QuicCongestionControlAlgorithm.CUBIC)
                .build()
            val group = MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory())
            val remote = InetSocketAddress(cfg.server.host, cfg.server.port)
            // Bind to the local address the kernel routes to the server, port 0.
            val local = DatagramSocket().use { s ->
                s.connect(remote)
                InetSocketAddress(s.localAddress, 0)
            }
            try {
                val udp = udpOptions(Bootstrap().group(group).channel(NioDatagramChannel::class.java))
                    .handler(codec)
                    .bind(local).sync().channel()
                reportUdpBuffers(udp)
                val quic = runBlocking {
                    withTimeout(timeoutMs) {
                        QuicChannel.newBootstrap(udp)
                            .handler(ChannelInboundHandlerAdapter())
                            .streamHandler(ChannelInboundHandlerAdapter())
                            .remoteAddress(remote)
                            .connect().awaitNetty()
                    }
                }
                return QuicClient(cfg, group, udp, quic)
            } catch (e: Throwable) {
                group.shutdownGracefully(0, 0, TimeUnit.MILLISECONDS)
                if (e is kotlinx.coroutines.TimeoutCancellationException) throw e
                val tls = trust.failure != null || isTlsFailure(e)
                if (tls) {
                    val why = trust.failure?.message ?: causeText(e)
                    throw OpFailure("tls", "TLS handshake with ${cfg.server} failed (TLS certificate/handshake error): $why")
                }
                throw OpFailure("connect", "QUIC connection to ${cfg.server} failed: ${causeText(e)}")
            }
        }
    }

    private suspend fun open(inbox: KChannel<Any>): QuicStreamChannel {
        if (!quic.isActive) throw OpFailure("connect", "the QUIC connection is closed")
        return try {
            quic.newStreamBootstrap()
                .type(QuicStreamType.BIDIRECTIONAL)
                .option(ChannelOption.ALLOW_HALF_CLOSURE, true)
                .handler(object : ChannelInitializer<QuicStreamChannel>() {
                    override fun initChannel(ch: QuicStreamChannel) {
                        ch.pipeline().addLast(FrameDecoder(), ClientStreamHandler(inbox))
                    }
                })
                .create().awaitNetty()
        } catch (e: Exception) {
            throw OpFailure("connect", "cannot open a stream: ${causeText(e)}")
        }
    }

    override suspend fun ready() {
        while (quic.isActive && quic.peerAllowedStreams(QuicStreamType.BIDIRECTIONAL) <= 0) delay(1)
    }

    private suspend fun ChannelFuture.awaitWrite() {
        try {
            awaitNetty()
        } catch (e: Exception) {
            throw OpFailure("connect", "write failed: ${causeText(e)}")
        }
    }

    /** Reads the next frame; FIN or a failure before STATUS fail the call. */
    private suspend fun next(inbox: KChannel<Any>): Frame {
        return when (val m = inbox.receive()) {
            is Frame -> m
            is Fin -> throw OpFailure("connect", "the stream ended before STATUS")
            is StreamError -> throw OpFailure(m.code, m.message)
            else -> throw OpFailure("internal", "unexpected $m")
        }
    }

    /** After STATUS: the server's FIN, and nothing else. */
    private suspend fun finish(inbox: KChannel<Any>, status: Frame) {
        val st = try { Status.parseFrom(status.body) } catch (e: Exception) { invalid("undecodable STATUS") }
        if (st.code != 0) throw OpFailure("rpc", "status ${st.code}: ${st.message}")
        when (val m = inbox.receive()) {
            is Fin -> {}
            is Frame -> invalid("a frame of type ${m.type} after STATUS")
            is StreamError -> if (m.code == "invalid") throw OpFailure(m.code, m.message)
            else -> {}
        }
    }

    private fun unexpected(f: Frame): Nothing = invalid("unexpected frame of type ${f.type} from the server")

    override suspend fun operation(seq: Long) {
        val inbox = KChannel<Any>(KChannel.UNLIMITED)
        val stream = open(inbox)
        try {
            val buf = stream.alloc().buffer()
            writeFrame(buf, F_HEADER, method)
            when (cfg.shape) {
                "unary" -> writeFrame(buf, F_MESSAGE, w.request(seq))
                "server_stream" -> writeFrame(buf, F_MESSAGE, w.request(seq, n))
                else -> for (k in 0 until n) writeFrame(buf, F_MESSAGE, w.request(k.toLong()))
            }
            writeFrame(buf, F_END, null as MessageLite?)
            stream.writeAndFlush(buf).addListener { if (it.isSuccess) stream.shutdownOutput() }
            when (cfg.shape) {
                "unary" -> {
                    val f = next(inbox)
                    if (f.type == F_STATUS) {
                        finish(inbox, f)
                        invalid("status OK before the response")
                    }
                    if (f.type != F_MESSAGE) unexpected(f)
                    w.checkResponse(parseResponse(f), seq, "response")
                    val s = next(inbox)
                    if (s.type == F_MESSAGE) invalid("more than 1 response")
                    if (s.type != F_STATUS) unexpected(s)
                    finish(inbox, s)
                }
                "client_stream" -> {
                    val f = next(inbox)
                    if (f.type == F_STATUS) {
                        finish(inbox, f)
                        invalid("status OK before the summary")
                    }
                    if (f.type != F_MESSAGE) unexpected(f)
                    val s = try { Summary.parseFrom(f.body) } catch (e: Exception) { invalid("undecodable summary") }
                    w.checkSummary(s, n.toLong())
                    val st = next(inbox)
                    if (st.type == F_MESSAGE) invalid("more than 1 summary")
                    if (st.type != F_STATUS) unexpected(st)
                    finish(inbox, st)
                }
                else -> {
                    var k = 0L
                    while (true) {
                        val f = next(inbox)
                        if (f.type == F_STATUS) {
                            if (k != n.toLong()) {
                                finish(inbox, f)
                                invalid("status OK after $k responses, expected $n")
                            }
                            finish(inbox, f)
                            break
                        }
                        if (f.type != F_MESSAGE) unexpected(f)
                        if (k >= n) invalid("more than $n responses")
                        w.checkResponse(parseResponse(f), k, "response $k")
                        k++
                    }
                }
            }
        } finally {
            stream.close()
        }
    }

    private fun parseResponse(f: Frame): Response =
        try { Response.parseFrom(f.body) } catch (e: Exception) { invalid("undecodable response") }

    override suspend fun saturate(deadline: Long, accepted: (Long) -> Unit): Long {
        val inbox = KChannel<Any>(KChannel.UNLIMITED)
        val stream = open(inbox)
        var sent = 0L
        try {
            val h = stream.alloc().buffer()
            writeFrame(h, F_HEADER, method)
            stream.write(h)
            do {
                val b = stream.alloc().buffer()
                writeFrame(b, F_MESSAGE, w.request(sent))
                stream.writeAndFlush(b).awaitWrite()
                sent++
                accepted(System.nanoTime())
            } while (System.nanoTime() < deadline)
            val e = stream.alloc().buffer()
            writeFrame(e, F_END, null as MessageLite?)
            stream.writeAndFlush(e).awaitWrite()
            stream.shutdownOutput()
            val f = next(inbox)
            if (f.type != F_MESSAGE) {
                if (f.type == F_STATUS) finish(inbox, f)
                invalid("no summary before STATUS")
            }
            val s = try { Summary.parseFrom(f.body) } catch (x: Exception) { invalid("undecodable summary") }
            w.checkSummary(s, sent)
            val st = next(inbox)
            if (st.type != F_STATUS) invalid("more than 1 summary")
            finish(inbox, st)
            return s.count
        } finally {
            stream.close()
        }
    }

    override fun transportProbe(): TransportProbe = QuicProbe(quic)

    override fun close() {
        try {
            quic.close(true, 0, Unpooled.copiedBuffer("done".toByteArray())).await(1000)
        } catch (e: Exception) {
        }
        udp.close()
        group.shutdownGracefully(0, 0, TimeUnit.MILLISECONDS)
    }
}

/**
 * The QUIC codec's statistics of the client's one connection: `collectStats()` (quiche's
 * connection counters) and `collectPathStats(0)` (the active path's gauges). On the connection's
 * event loop both complete at once, so a poll costs two native calls and never waits.
 */
class QuicProbe(private val quic: QuicChannel) : TransportProbe {
    override val transport = "quic"
    override val executor: java.util.concurrent.ScheduledExecutorService = quic.eventLoop()

    override fun read(): List<ConnReading> {
        val stats = quic.collectStats()
        val path = quic.collectPathStats(0)
        if (!stats.isSuccess || !path.isSuccess) return emptyList()
        return listOf(quicReading(0, stats.now, path.now))
    }
}

/**
 * One QUIC connection's reading. quiche's units: `rtt` in nanoseconds (its C API's
 * `rtt.as_nanos()`), `deliveryRate` in bytes/s, `cwnd` and `sentBytes` in bytes; `sent`, `lost`
 * and `retrans` are packets (`retrans`: packets that carried retransmitted data).
 */
fun quicReading(id: Long, s: io.netty.handler.codec.quic.QuicConnectionStats, p: io.netty.handler.codec.quic.QuicConnectionPathStats) =
    ConnReading(
        id = id,
        packetsSent = s.sent(),
        bytesSent = s.sentBytes(),
        retransmitted = s.retrans(),
        lost = s.lost(),
        cwndBytes = p.cwnd(),
        srttNs = p.rtt(),
        deliveryRateBps = p.deliveryRate() * 8,
    )

/** One server call on one stream: frames in, checks, responses and STATUS out. */
internal class ServerCall : ChannelInboundHandlerAdapter() {
    private var method: String? = null
    private var unknownMethod: String? = null
    private var rejected: String? = null
    private var k = 0L
    private var first: Request? = null
    private var firstLen = 0L
    private var bytes = 0L
    private var done = false
    private var inputDone = false
    private var pending = 0

    override fun channelRead(ctx: ChannelHandlerContext, msg: Any) {
        if (done) return
        if (msg is StreamError) {
            abort(ctx, msg.message)
            return
        }
        val f = msg as Frame
        when {
            method == null && unknownMethod == null -> {
                if (f.type != F_HEADER) {
                    abort(ctx, "a call must start with HEADER, got a frame of type ${f.type}")
                    return
                }
                val path = String(f.body, Charsets.UTF_8)
                ServerCounters.rpcs.incrementAndGet()
                val shape = METHODS.entries.firstOrNull { it.value == path }?.key
                if (shape == null) unknownMethod = path else method = shape
            }
            f.type == F_MESSAGE -> message(ctx, f)
            f.type == F_END -> end(ctx)
            else -> abort(ctx, "unexpected frame of type ${f.type} from the client")
        }
    }

    private fun message(ctx: ChannelHandlerContext, f: Frame) {
        ServerCounters.requests.incrementAndGet()
        if (unknownMethod != null || rejected != null) return
        val r = try { Request.parseFrom(f.body) } catch (e: Exception) {
            rejected = "request $k: undecodable Request"
            return
        }
        try {
            when (method) {
                "unary", "server_stream" -> {
                    if (k > 0) throw BadRequest("more than one request in a ${method} call")
                    Serve.checkRequest(r, 0, method == "server_stream")
                    first = r
                }
                else -> {
                    val len = Serve.checkStreamed(r, k, first, firstLen)
                    if (first == null) {
                        first = r
                        firstLen = len
                    }
                    bytes += len
                    if (method == "bidi") {
                        send(ctx, Serve.response(r.seq, r))
                    }
                }
            }
            k++
        } catch (e: BadRequest) {
            rejected = e.message
        }
    }

    private fun send(ctx: ChannelHandlerContext, m: MessageLite) {
        val b = ctx.alloc().buffer(5 + m.serializedSize)
        writeFrame(b, F_MESSAGE, m)
        ctx.write(b)
        ServerCounters.responses.incrementAndGet()
        pending += b.readableBytes()
        if (pending >= 32 * 1024) {
            ctx.flush()
            pending = 0
        }
    }

    private fun end(ctx: ChannelHandlerContext) {
        if (unknownMethod != null) return status(ctx, 12, "unknown method $unknownMethod")
        if (rejected == null && k == 0L) rejected = "a ${method} call without any request"
        rejected?.let { return status(ctx, 3, it) }
        val req = first!!
        when (method) {
            "unary" -> send(ctx, Serve.response(req.seq, req))
            "client_stream" -> send(ctx, Serve.summary(k, bytes, k - 1, req))
            "server_stream" -> for (i in 0 until req.responseMessages) send(ctx, Serve.response(i.toLong(), req))
        }
        status(ctx, 0, "")
    }

    private fun status(ctx: ChannelHandlerContext, code: Int, message: String) {
        if (code != 0) ServerCounters.reject("quic ${method ?: unknownMethod ?: "call"}: $message")
        done = true
        val b = ctx.alloc().buffer()
        writeFrame(b, F_STATUS, Status.newBuilder().setCode(code).setMessage(message).build())
        ctx.writeAndFlush(b).addListener {
            (ctx.channel() as QuicStreamChannel).shutdownOutput().addListener { if (inputDone) ctx.close() }
        }
    }

    /** Broken framing: STATUS 3 where possible, then the stream is closed. */
    private fun abort(ctx: ChannelHandlerContext, why: String) {
        if (done) return
        ServerCounters.reject("quic ${method ?: unknownMethod ?: "call"}: $why")
        done = true
        val b = ctx.alloc().buffer()
        writeFrame(b, F_STATUS, Status.newBuilder().setCode(3).setMessage(why).build())
        ctx.writeAndFlush(b).addListener { ctx.close() }
    }

    override fun channelReadComplete(ctx: ChannelHandlerContext) {
        if (pending > 0) {
            ctx.flush()
            pending = 0
        }
    }

    override fun userEventTriggered(ctx: ChannelHandlerContext, evt: Any) {
        if (evt is ChannelInputShutdownEvent) {
            inputDone = true
            if (!done && method == null && unknownMethod == null) {
                // A stream that ended before its first frame is no call (the Rust backpressure
                // client opens one it never uses): close it, reject nothing.
                done = true
                ctx.close()
            } else if (!done) {
                abort(ctx, "the stream ended before END")
            } else if (!(ctx.channel() as QuicStreamChannel).isOutputShutdown) {
                // STATUS is on its way; the listener closes the stream after our FIN.
            } else {
                ctx.close()
            }
        }
    }

    override fun exceptionCaught(ctx: ChannelHandlerContext, cause: Throwable) {
        val root = if (cause is io.netty.handler.codec.DecoderException && cause.cause != null) cause.cause!! else cause
        if (root is FrameError) abort(ctx, root.message ?: "broken framing") else ctx.close()
    }
}

/** Tracks the server's connections so that SHUTDOWN can close each; one instance for all. */
@ChannelHandler.Sharable
private class ConnectionTracker(val connections: MutableSet<QuicChannel>) : ChannelInboundHandlerAdapter() {
    override fun channelActive(ctx: ChannelHandlerContext) {
        val q = ctx.channel() as QuicChannel
        connections.add(q)
        q.closeFuture().addListener { connections.remove(q) }
        ctx.fireChannelActive()
    }

    override fun exceptionCaught(ctx: ChannelHandlerContext, cause: Throwable) {
        log("connection: ${causeText(cause)}")
    }
}

class QuicServer(private val cfg: ServerConfig) {
    private val group = MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory())
    private val connections = ConcurrentHashMap.newKeySet<QuicChannel>()
    private var udp: Channel? = null
    private val codec: io.netty.channel.ChannelHandler

    init {
        // --stack quic refuses --tls off (Args.kt), so --cert and --key are always given.
        val cert = readable("--cert", cfg.cert!!)
        val key = readable("--key", cfg.key!!)
        val ssl = try {
            QuicSslContextBuilder.forServer(key, null, cert)
                .applicationProtocols(ALPN)
                .option(BoringSSLContextOption.GROUPS, arrayOf("X25519"))
                .earlyData(false)
                .sessionCacheSize(0)
                .build()
        } catch (e: Exception) {
            throw ArgError("--cert ${cfg.cert} / --key ${cfg.key}: cannot load the certificate or key (${causeText(e)})")
        }
        codec = QuicServerCodecBuilder()
            .sslContext(ssl)
            .maxIdleTimeout(30_000, TimeUnit.MILLISECONDS)
            .initialMaxData(WINDOW.toLong())
            .initialMaxStreamDataBidirectionalLocal(WINDOW.toLong())
            .initialMaxStreamDataBidirectionalRemote(WINDOW.toLong())
            .initialMaxStreamDataUnidirectional(0)
            .initialMaxStreamsBidirectional(10_000)
            .initialMaxStreamsUnidirectional(0)
            .congestionControlAlgorithm(QuicCongestionControlAlgorithm.CUBIC)
            .handler(ConnectionTracker(connections))
            .streamOption(ChannelOption.ALLOW_HALF_CLOSURE, true)
            .streamHandler(object : ChannelInitializer<QuicStreamChannel>() {
                override fun initChannel(ch: QuicStreamChannel) {
                    ch.pipeline().addLast(FrameDecoder(), ServerCall())
                }
            })
            .build()
    }

    fun start(): InetSocketAddress {
        val ch = udpOptions(Bootstrap().group(group).channel(NioDatagramChannel::class.java))
            .handler(codec)
            .bind(InetSocketAddress(cfg.listen.host, cfg.listen.port)).sync().channel()
        reportUdpBuffers(ch)
        udp = ch
        return ch.localAddress() as InetSocketAddress
    }

    fun stop() {
        val closing = connections.map { it.close(true, 0, Unpooled.copiedBuffer("shutdown".toByteArray())) }
        closing.forEach { it.awaitUninterruptibly(500) }
        udp?.close()?.awaitUninterruptibly(500)
        group.shutdownGracefully(0, 0, TimeUnit.MILLISECONDS)
    }
}
