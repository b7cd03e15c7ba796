package rpcarena.peer

import io.grpc.ConnectivityState
import io.grpc.ManagedChannel
import io.grpc.Metadata
import io.grpc.Server
import io.grpc.ServerCall
import io.grpc.ServerCallHandler
import io.grpc.ServerMethodDefinition
import io.grpc.ServerServiceDefinition
import io.grpc.Status
import io.grpc.StatusException
import io.grpc.netty.shaded.io.grpc.netty.GrpcSslContexts
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder
import io.grpc.netty.shaded.io.netty.channel.ChannelFactory
import io.grpc.netty.shaded.io.netty.channel.ChannelOption
import io.grpc.netty.shaded.io.netty.channel.epoll.Epoll
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollEventLoopGroup
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollSocketChannel
import io.grpc.netty.shaded.io.netty.util.concurrent.DefaultThreadFactory
import io.grpc.netty.shaded.io.netty.handler.ssl.SslContextBuilder
import io.grpc.netty.shaded.io.netty.handler.ssl.SslProvider
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.asExecutor
import kotlinx.coroutines.flow.Flow
import kotlinx.coroutines.flow.flow
import kotlinx.coroutines.suspendCancellableCoroutine
import kotlinx.coroutines.withTimeout
import rpcarena.bench.v1.Bench.Empty
import rpcarena.bench.v1.Bench.Request
import rpcarena.bench.v1.Bench.Response
import rpcarena.bench.v1.Bench.Summary
import rpcarena.bench.v1.BenchServiceGrpc
import rpcarena.bench.v1.BenchServiceGrpcKt
import java.net.InetSocketAddress
import java.util.concurrent.TimeUnit
import kotlin.coroutines.resume

// The grpc stack: grpc-kotlin coroutine stubs on grpc-java's Netty transport (grpc-netty-shaded),
// TLS by the JDK's provider (TLS 1.3, X25519 through jdk.tls.namedGroups), ALPN h2, 16 MiB
// windows with BDP probing off (flowControlWindow), 10,000 concurrent streams on the server,
// 16 MiB + 1 KiB message limits, TCP_NODELAY. With --tls off (revision 1.3) both ends speak
// HTTP/2 with prior knowledge (h2c): usePlaintext() on the channel, no sslContext on the server;
// every other setting is the same.

const val WINDOW = 16 * 1024 * 1024

/** Maps a failed call to a protocol error code (docs/peer-protocol.md "Error codes"). */
fun grpcFailure(e: Throwable, tlsPhase: Boolean = false): OpFailure {
    if (e is OpFailure) return e
    val status = Status.fromThrowable(e)
    val cause = status.cause
    val code = when {
        status.code == Status.Code.DEADLINE_EXCEEDED -> "timeout"
        // grpc-kotlin's own check of a unary or client-stream answer (no message, or two): the
        // library made this status from what the server sent, so it is a count failure.
        status.code == Status.Code.INTERNAL && cause == null &&
            (status.description ?: "").startsWith("Expected one ") -> "invalid"
        status.code == Status.Code.CANCELLED && cause != null -> "connect"
        cause != null && isTlsFailure(cause) -> if (tlsPhase) "tls" else "connect"
        cause != null -> "connect"
        status.code == Status.Code.UNAVAILABLE && (status.description ?: "").let {
            it.contains("io exception", true) || it.contains("Connection", true) || it.contains("Network closed", true)
        } -> "connect"
        else -> "rpc"
    }
    val text = "status ${status.code}${status.description?.let { ": $it" } ?: ""}${cause?.let { " (${causeText(it)})" } ?: ""}"
    return OpFailure(code, text)
}

class GrpcClient(private val cfg: ClientConfig) : ClientStack {
    override val connections = 1
    private val w = Workload(cfg.structured, cfg.requestSize, cfg.askedResponseSize, cfg.messagesPerStream)
    private val n = cfg.messagesPerStream
    private val channel: ManagedChannel
    private val stub: BenchServiceGrpcKt.BenchServiceCoroutineStub

    /**
     * The epoll transport grpc-java picks by default on Linux, made explicit so that the client
     * holds its sockets (TcpProbe): one event loop (one connection), daemon threads as grpc's own
     * group. Without native epoll the builder keeps its defaults (NIO) and reports no statistics.
     */
    private val group = if (Epoll.isAvailable()) EpollEventLoopGroup(1, DefaultThreadFactory("grpc-client-epoll", true)) else null
    private val sockets = java.util.concurrent.CopyOnWriteArrayList<EpollSocketChannel>()

    init {
        channel = NettyChannelBuilder.forAddress(cfg.server.host, cfg.server.port)
            .apply { if (cfg.tls) secure(this) else usePlaintext() }
            .flowControlWindow(WINDOW)
            .maxInboundMessageSize(MAX_FRAME)
            .maxInboundMetadataSize(64 * 1024)
            .withOption(ChannelOption.TCP_NODELAY, true)
            .executor(Dispatchers.Default.asExecutor())
            .disableRetry()
            .apply {
                if (group != null) {
                    eventLoopGroup(group)
                    channelFactory(
                        ChannelFactory { EpollSocketChannel().also { sockets.add(it) } },
                        InetSocketAddress::class.java,
                    )
                }
            }
            .build()
        stub = BenchServiceGrpcKt.BenchServiceCoroutineStub(channel)
            .withMaxInboundMessageSize(MAX_FRAME)
            .withMaxOutboundMessageSize(MAX_FRAME)
    }

    /** TLS 1.3 trusting only --ca, the leaf checked against --server-name (also the authority). */
    private fun secure(b: NettyChannelBuilder) {
        val serverName = cfg.serverName!!
        val ssl = GrpcSslContexts.configure(SslContextBuilder.forClient(), SslProvider.JDK)
            .trustManager(CampaignTrust(loadCa(cfg.ca!!), serverName))
            .protocols(TLS13)
            .ciphers(TLS_CIPHERS)
            .build()
        b.sslContext(ssl).overrideAuthority(serverName)
    }

    /** Opens the connection (TLS included) and waits until it is READY; a failure says why. */
    suspend fun connect(timeoutMs: Long) {
        withTimeout(timeoutMs) {
            var state = channel.getState(true)
            while (state != ConnectivityState.READY) {
                if (state == ConnectivityState.TRANSIENT_FAILURE || state == ConnectivityState.SHUTDOWN) break
                val from = state
                suspendCancellableCoroutine { c -> channel.notifyWhenStateChanged(from) { c.resume(Unit) } }
                state = channel.getState(true)
            }
            if (state != ConnectivityState.READY) {
                // The channel keeps the reason for the call that fails next: ask for it.
                try {
                    stub.withDeadlineAfter(10, TimeUnit.SECONDS).unary(w.request(0))
                } catch (e: Exception) {
                    val f = grpcFailure(e, tlsPhase = cfg.tls)
                    val code = if (f.code == "rpc") "connect" else f.code
                    val prefix = if (code == "tls") "TLS handshake with ${cfg.server} failed (TLS certificate/handshake error): " else "connecting to ${cfg.server} failed: "
                    throw OpFailure(code, prefix + f.message)
                }
                throw OpFailure("connect", "connecting to ${cfg.server}: the channel is $state")
            }
        }
    }

    override suspend fun operation(seq: Long) {
        try {
            when (cfg.shape) {
                "unary" -> w.checkResponse(stub.unary(w.request(seq)), seq, "response")
                // The acknowledgement is Empty with status OK; a non-OK status throws below.
                SEND -> stub.command(w.request(seq))
                "client_stream" -> w.checkSummary(stub.clientStream(requests()), n.toLong())
                "server_stream" -> {
                    var k = 0L
                    stub.serverStream(w.request(seq, n)).collect { r ->
                        if (k >= n) invalid("more than $n responses")
                        w.checkResponse(r, k, "response $k")
                        k++
                    }
                    if (k != n.toLong()) invalid("status OK after $k responses, expected $n")
                }
                "bidi" -> {
                    var k = 0L
                    stub.bidi(requests()).collect { r ->
                        if (k >= n) invalid("more than $n responses")
                        w.checkResponse(r, k, "response $k")
                        k++
                    }
                    if (k != n.toLong()) invalid("status OK after $k responses, expected $n")
                }
            }
        } catch (e: OpFailure) {
            throw e
        } catch (e: StatusException) {
            throw grpcFailure(e)
        } catch (e: io.grpc.StatusRuntimeException) {
            throw grpcFailure(e)
        }
    }

    private fun requests(): Flow<Request> = flow { for (k in 0 until n) emit(w.request(k.toLong())) }

    override suspend fun saturate(deadline: Long, accepted: (Long) -> Unit): Long {
        var sent = 0L
        val summary: Summary = try {
            stub.clientStream(flow {
                do {
                    emit(w.request(sent))
                    sent++
                    accepted(System.nanoTime())
                } while (System.nanoTime() < deadline)
            })
        } catch (e: StatusException) {
            throw grpcFailure(e)
        } catch (e: io.grpc.StatusRuntimeException) {
            throw grpcFailure(e)
        }
        w.checkSummary(summary, sent)
        return summary.count
    }

    override fun transportProbe(): TransportProbe? {
        val first = sockets.firstOrNull { it.isActive } ?: return null
        return TcpProbe(sockets, first.eventLoop())
    }

    override fun close() {
        channel.shutdownNow()
        group?.shutdownGracefully(0, 0, TimeUnit.MILLISECONDS)
    }
}

/**
 * TCP_INFO of the client's open sockets through Netty's `EpollSocketChannel.tcpInfo()`, which
 * copies only the classic `struct tcp_info` fields up to `tcpi_total_retrans` (no `segs_out`,
 * `bytes_sent`, `min_rtt`, `delivery_rate`, `busy_time`, `rwnd_limited`, `sndbuf_limited` or
 * `total_rto`: those fields are left out). A getsockopt per socket, on the first socket's event loop.
 */
class TcpProbe(
    private val sockets: List<EpollSocketChannel>,
    override val executor: java.util.concurrent.ScheduledExecutorService,
) : TransportProbe {
    override val transport = "tcp"

    override fun read(): List<ConnReading> = sockets.mapIndexedNotNull { i, ch ->
        if (!ch.isActive) return@mapIndexedNotNull null
        val t = try { ch.tcpInfo() } catch (e: Exception) { return@mapIndexedNotNull null }
        tcpReading(i.toLong(), t.caState(), t.sndCwnd(), t.sndMss(), t.rtt(), t.totalRetrans())
    }
}

/** Linux's TCP_CA_Recovery and TCP_CA_Loss (include/net/tcp.h's tcp_ca_state). */
const val TCP_CA_RECOVERY = 3
const val TCP_CA_LOSS = 4

/** One socket's reading from the TCP_INFO fields Netty gives (`rttUs` in microseconds). */
fun tcpReading(id: Long, caState: Int, sndCwnd: Long, sndMss: Long, rttUs: Long, totalRetrans: Long) = ConnReading(
    id = id,
    retransmitted = totalRetrans,
    inRecovery = caState == TCP_CA_RECOVERY || caState == TCP_CA_LOSS,
    cwndBytes = sndCwnd * sndMss,
    srttNs = rttUs * 1000,
)

/**
 * The grpc server: validates every request (BadRequest -> INVALID_ARGUMENT). Unary, server-stream
 * and bidi calls run as grpc-kotlin coroutines; the client-stream method is served by
 * [GrpcClientStreamHandler] instead (see [benchService]), so this class does not implement it.
 */
class GrpcService : BenchServiceGrpcKt.BenchServiceCoroutineImplBase(Dispatchers.Default) {
    private fun reject(method: String, e: BadRequest): Nothing {
        ServerCounters.reject("grpc $method: ${e.message}")
        throw StatusException(Status.INVALID_ARGUMENT.withDescription(e.message))
    }

    override suspend fun unary(request: Request): Response {
        ServerCounters.rpcs.incrementAndGet()
        ServerCounters.requests.incrementAndGet()
        try {
            Serve.checkRequest(request, 0, false)
        } catch (e: BadRequest) {
            reject("Unary", e)
        }
        ServerCounters.responses.incrementAndGet()
        return Serve.response(request.seq, request)
    }

    /**
     * A one-way command (shape `send`, revision 1.3): validated as a unary request with
     * response_size 0, counted in `commands` (and as a call, a request message and, for its
     * Empty, a response message, as the Go and C++ servers count it), answered with Empty; a
     * command that fails is answered INVALID_ARGUMENT and counted in `rejected`.
     */
    override suspend fun command(request: Request): Empty {
        ServerCounters.rpcs.incrementAndGet()
        ServerCounters.requests.incrementAndGet()
        try {
            Serve.checkCommand(request)
        } catch (e: BadRequest) {
            reject("Command", e)
        }
        ServerCounters.commands.incrementAndGet()
        ServerCounters.responses.incrementAndGet()
        return Empty.getDefaultInstance()
    }

    override fun serverStream(request: Request): Flow<Response> = flow {
        ServerCounters.rpcs.incrementAndGet()
        ServerCounters.requests.incrementAndGet()
        try {
            Serve.checkRequest(request, 0, true)
        } catch (e: BadRequest) {
            reject("ServerStream", e)
        }
        for (k in 0 until request.responseMessages) {
            emit(Serve.response(k.toLong(), request))
            ServerCounters.responses.incrementAndGet()
        }
    }

    override fun bidi(requests: Flow<Request>): Flow<Response> = flow {
        ServerCounters.rpcs.incrementAndGet()
        var k = 0L
        var first: Request? = null
        var firstLen = 0L
        try {
            requests.collect { r ->
                ServerCounters.requests.incrementAndGet()
                val len = Serve.checkStreamed(r, k, first, firstLen)
                if (first == null) {
                    first = r
                    firstLen = len
                }
                k++
                emit(Serve.response(r.seq, r))
                ServerCounters.responses.incrementAndGet()
            }
            if (k == 0L) throw BadRequest("a bidi call without any request")
        } catch (e: BadRequest) {
            reject("Bidi", e)
        }
    }
}

/**
 * The service as the server binds it: grpc-kotlin's definitions of [GrpcService], with the
 * client-stream method replaced by [GrpcClientStreamHandler].
 */
fun benchService(): ServerServiceDefinition {
    val coroutines = GrpcService().bindService()
    val clientStream = BenchServiceGrpc.getClientStreamMethod()
    val b = ServerServiceDefinition.builder(coroutines.serviceDescriptor)
    for (m in coroutines.methods) {
        if (m.methodDescriptor.fullMethodName == clientStream.fullMethodName) continue
        @Suppress("UNCHECKED_CAST")
        b.addMethod(m as ServerMethodDefinition<Any, Any>)
    }
    return b.addMethod(clientStream, GrpcClientStreamHandler()).build()
}

/**
 * The server's client-stream method on grpc-java's listener API, with inbound messages requested
 * in batches. grpc-kotlin's coroutine server asks the transport for one message at a time: each
 * message hops from the Netty event loop to the call's executor, wakes the collecting coroutine
 * (a dispatch), and its `request(1)` hops back to the event loop before the next message is
 * deframed. Under send-saturation (4 streams of 64 B messages as fast as the client can send) that
 * cost tens of microseconds of CPU per message on two cores, the server fell behind the client
 * by more than the 16 MiB window holds, and its summaries missed the 2 s settle bound (README,
 * "Send-saturation"). Here the listener checks each message where grpc-java delivers it (the
 * call's serializing executor on Dispatchers.Default, in order) and asks for more when half the
 * batch is used. The batch holds at most [CREDIT_BYTES] of messages (at least one), so large
 * messages are not buffered beyond the flow-control window without bound.
 */
class GrpcClientStreamHandler : ServerCallHandler<Request, Summary> {
    override fun startCall(call: ServerCall<Request, Summary>, headers: Metadata): ServerCall.Listener<Request> {
        ServerCounters.rpcs.incrementAndGet()
        call.request(1)
        return Listener(call)
    }

    // Callbacks of one call never overlap and see each other's writes (grpc-java serializes them).
    private class Listener(private val call: ServerCall<Request, Summary>) : ServerCall.Listener<Request>() {
        private var k = 0L
        private var first: Request? = null
        private var firstLen = 0L
        private var bytes = 0L
        private var outstanding = 1
        private var closed = false

        override fun onMessage(message: Request) {
            if (closed) return
            ServerCounters.requests.incrementAndGet()
            outstanding--
            try {
                val len = Serve.checkStreamed(message, k, first, firstLen)
                if (first == null) {
                    first = message
                    firstLen = len
                }
                bytes += len
                k++
            } catch (e: BadRequest) {
                reject(e.message ?: "invalid request")
                return
            }
            val batch = creditBatch(message.serializedSize)
            if (outstanding <= batch / 2) {
                call.request(batch - outstanding)
                outstanding = batch
            }
        }

        override fun onHalfClose() {
            if (closed) return
            val f = first ?: return reject("a client stream without any request")
            ServerCounters.responses.incrementAndGet()
            closed = true
            call.sendHeaders(Metadata())
            call.sendMessage(Serve.summary(k, bytes, k - 1, f))
            call.close(Status.OK, Metadata())
        }

        override fun onCancel() {
            closed = true
        }

        private fun reject(why: String) {
            ServerCounters.reject("grpc ClientStream: $why")
            closed = true
            call.close(Status.INVALID_ARGUMENT.withDescription(why), Metadata())
        }
    }
}

/** Bytes of inbound messages a client-stream call asks for at once (beyond the HTTP/2 window). */
const val CREDIT_BYTES = 1 shl 20

/** Messages to request at once for messages of [size] bytes: 1 MiB of them, 1 to 256. */
fun creditBatch(size: Int): Int = (CREDIT_BYTES / maxOf(size, 1)).coerceIn(1, 256)

/** The server: TLS from --cert and --key, or (--tls off) HTTP/2 with prior knowledge. */
class GrpcServer(cfg: ServerConfig) {
    private val server: Server

    init {
        server = NettyServerBuilder.forAddress(InetSocketAddress(cfg.listen.host, cfg.listen.port))
            .apply { if (cfg.tls) sslContext(serverSsl(cfg.cert!!, cfg.key!!)) }
            .flowControlWindow(WINDOW)
            .maxConcurrentCallsPerConnection(10_000)
            .maxInboundMessageSize(MAX_FRAME)
            .withChildOption(ChannelOption.TCP_NODELAY, true)
            .executor(Dispatchers.Default.asExecutor())
            .addService(benchService())
            .build()
    }

    private fun serverSsl(certPath: String, keyPath: String): io.grpc.netty.shaded.io.netty.handler.ssl.SslContext {
        val cert = readable("--cert", certPath)
        val key = readable("--key", keyPath)
        return try {
            GrpcSslContexts.configure(SslContextBuilder.forServer(cert, key), SslProvider.JDK)
                .protocols(TLS13)
                .ciphers(TLS_CIPHERS)
                .build()
        } catch (e: Exception) {
            throw ArgError("--cert $certPath / --key $keyPath: cannot load the certificate or key (${causeText(e)})")
        }
    }

    /** Binds; returns the bound address. */
    fun start(): InetSocketAddress {
        server.start()
        return server.listenSockets.first() as InetSocketAddress
    }

    fun stop() {
        server.shutdownNow()
    }
}

