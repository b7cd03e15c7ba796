package rpcarena.peer

import kotlin.test.Test
import kotlin.test.assertEquals
import kotlin.test.assertFailsWith
import kotlin.test.assertFalse
import kotlin.test.assertNull
import kotlin.test.assertTrue

// Revision 1.3's arguments: `--tls on|off` in both roles (the TLS arguments refused with off and
// required with on, quic refusing off) and the `send` shape (grpc only; send-saturation takes it).
class ArgsRevision13Test {
    private val server = listOf("--stack", "grpc", "--listen", "127.0.0.1:0")
    private val serverTls = listOf("--cert", "server.pem", "--key", "server.key")
    private val clientTls = listOf("--server-name", "127.0.0.1", "--ca", "ca.pem")

    private fun client(
        stack: String = "grpc",
        shape: String = "unary",
        load: List<String> = listOf("--load", "closed"),
        responseSize: Int = 64,
    ) = listOf(
        "--stack", stack, "--server", "127.0.0.1:1", "--shape", shape, "--concurrency", "2",
        "--request-size", "64", "--response-size", "$responseSize", "--messages-per-stream", "4",
        "--warmup-ms", "0", "--window-ms", "1", "--drain-ms", "1",
    ) + load

    private fun refusal(parse: () -> Any): String = assertFailsWith<ArgError> { parse() }.message!!

    @Test
    fun tlsIsOnByDefaultAndThenNeedsItsArguments() {
        val s = parseServer(server + serverTls)
        assertTrue(s.tls)
        assertEquals("server.pem", s.cert)
        assertTrue(parseServer(server + serverTls + listOf("--tls", "on")).tls)
        assertEquals("--key is missing (needed with --tls on, the default)", refusal { parseServer(server + listOf("--cert", "server.pem")) })
        val c = parseClient(client() + clientTls)
        assertTrue(c.tls)
        assertEquals("ca.pem", c.ca)
        assertEquals("--ca is missing (needed with --tls on, the default)", refusal { parseClient(client() + listOf("--tls", "on", "--server-name", "x")) })
        assertEquals("--server-name is missing (needed with --tls on, the default)", refusal { parseClient(client() + listOf("--ca", "ca.pem")) })
    }

    @Test
    fun tlsOffRefusesEveryTlsArgumentNamingIt() {
        val s = parseServer(server + listOf("--tls", "off"))
        assertFalse(s.tls)
        assertNull(s.cert)
        assertNull(s.key)
        for ((flag, value) in listOf("--cert" to "server.pem", "--key" to "server.key")) {
            assertEquals("$flag does not apply to --tls off", refusal { parseServer(server + listOf("--tls", "off", flag, value)) })
        }
        val c = parseClient(client() + listOf("--tls", "off"))
        assertFalse(c.tls)
        assertNull(c.ca)
        assertNull(c.serverName)
        for ((flag, value) in listOf("--ca" to "ca.pem", "--server-name" to "127.0.0.1")) {
            assertEquals("$flag does not apply to --tls off", refusal { parseClient(client() + listOf(flag, value, "--tls", "off")) })
        }
    }

    @Test
    fun tlsTakesOnlyOnOrOffAndOnlyOnce() {
        assertEquals("--tls \"yes\": expected one of on, off", refusal { parseServer(server + serverTls + listOf("--tls", "yes")) })
        assertEquals("--tls \"OFF\": expected one of on, off", refusal { parseClient(client() + listOf("--tls", "OFF")) })
        assertEquals("--tls is given twice", refusal { parseClient(client() + listOf("--tls", "off", "--tls", "off")) })
    }

    @Test
    fun quicRefusesTlsOffInBothRoles() {
        val why = "--tls off: QUIC has TLS 1.3 inside; --tls off does not apply to --stack quic"
        assertEquals(why, refusal { parseServer(listOf("--stack", "quic", "--listen", "127.0.0.1:0", "--tls", "off")) })
        assertEquals(why, refusal { parseClient(client(stack = "quic") + listOf("--tls", "off")) })
        assertTrue(parseClient(client(stack = "quic") + clientTls).tls)
        assertEquals(listOf("on"), tlsValues("quic"))
        assertEquals(listOf("on", "off"), tlsValues("grpc"))
    }

    @Test
    fun sendIsAGrpcShapeAndQuicSaysWhyNot() {
        val c = parseClient(client(shape = "send") + listOf("--tls", "off"))
        assertTrue(c.send)
        assertEquals(0, c.askedResponseSize)
        val e = refusal { parseClient(client(stack = "quic", shape = "send") + clientTls) }
        assertTrue(e.startsWith("--shape send is not offered on --stack quic: the native framing answers every request"), e)
        assertEquals(SHAPES + "send", clientShapes("grpc"))
        assertEquals(SHAPES, clientShapes("quic"))
    }

    @Test
    fun sendSaturationTakesClientStreamsAndSendOnly() {
        val sat = listOf("--load", "send-saturation", "--streams", "8", "--settle-ms", "200")
        val c = parseClient(client(shape = "send", load = sat) + listOf("--tls", "off"))
        assertEquals(8, c.lanes)
        assertEquals("client_stream", parseClient(client(shape = "client_stream", load = sat) + clientTls).shape)
        assertEquals(
            "--load send-saturation needs --shape client_stream or send, not unary",
            refusal { parseClient(client(shape = "unary", load = sat) + clientTls) },
        )
    }

    @Test
    fun sendIgnoresTheResponseSizeEvenWhereAStructuredOneCouldNotBeBuilt() {
        val structured = listOf("--tls", "off", "--payload", "structured")
        val c = parseClient(client(shape = "send", responseSize = 1) + structured)
        assertEquals(1, c.responseSize)
        assertEquals(0, c.askedResponseSize)
        assertEquals(
            "--response-size 2 cannot be built as a structured payload: use 0 or at least 3",
            refusal { parseClient(client(shape = "unary", responseSize = 2) + structured) },
        )
    }
}
