package rpcarena.peer

import java.net.InetSocketAddress

const val UDP_BUFFER = 8 * 1024 * 1024

object QuicClient {
    fun connect(cfg: ClientConfig, timeoutMs: Long): ClientStack = throw OpFailure("connect", "quic: not yet")
}

class QuicServer(cfg: ServerConfig) {
    fun start(): InetSocketAddress = throw IllegalStateException("quic: not yet")
    fun stop() {}
}
