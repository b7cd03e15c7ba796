package rpcarena.peer

import java.lang.management.ManagementFactory
import java.util.Properties

// The `capabilities` event (docs/peer-protocol.md): what each role offers per stack, the
// settings it really uses (docs/stacks.md "Declared"), its deviations, how it was built and what
// runs it. Versions come from the POM (a filtered resource), so they are what Maven resolved.

object Capabilities {
    val versions: Properties = Properties().also { p ->
        Capabilities::class.java.getResourceAsStream("/rpcarena-peer-kotlin.properties")?.use { p.load(it) }
    }

    private fun v(k: String) = versions.getProperty(k, "unknown")

    val runtime: String
        get() = "kotlinx.coroutines Dispatchers.Default (${Runtime.getRuntime().availableProcessors()} workers) on ${System.getProperty("java.vm.name")} ${System.getProperty("java.runtime.version")}"

    private val common = linkedMapOf<String, Any>(
        "tls_versions" to listOf("1.3"),
        "tls_groups" to listOf("x25519"),
        "tls_ciphers" to TLS_CIPHERS_DECLARED,
        "tls_resumption" to false,
        "max_concurrent_streams" to 10_000,
        "max_message_bytes" to MAX_FRAME,
        "connections" to 1,
        "compression" to "none",
    )

    private fun grpcSettings() = LinkedHashMap(common).apply {
        put("alpn", "h2")
        put("stream_window", WINDOW)
        put("connection_window", WINDOW)
        put("bdp_probing", false)
        put("tcp_nodelay", true)
        put("congestion_control", "host default")
        put("runtime", "$runtime; grpc-java Netty event loops")
    }

    private fun quicSettings() = LinkedHashMap(common).apply {
        put("alpn", "rpcarena/1")
        put("stream_window", WINDOW)
        put("connection_window", WINDOW)
        put("congestion_control", "cubic")
        put("udp_buffer_bytes", UDP_BUFFER)
        put("idle_timeout_ms", 30_000)
        put("tls_ciphers", listOf("TLS13_AES_128_GCM_SHA256", "TLS13_AES_256_GCM_SHA384", "TLS13_CHACHA20_POLY1305_SHA256"))
        put("runtime", "$runtime; one Netty NIO event loop")
    }

    private val grpcDeviations = listOf(
        "TCP congestion control: cubic required, the JVM cannot set TCP_CONGESTION on a socket, so the host default is used",
        "backpressure readiness: grpc-java has no readiness signal before a call starts; the submitter starts calls up to --max-in-flight and Netty queues those beyond the server's stream limit",
    )
    private val quicDeviations = listOf(
        "QUIC send window: 16777216 required, quiche has no separate send window (the peer's receive windows bound what is in flight)",
        "UDP socket buffers: 8388608 asked with SO_RCVBUF/SO_SNDBUF, capped by net.core.rmem_max/wmem_max (the JVM cannot use SO_RCVBUFFORCE)",
        "QUIC keep-alive: a PING every 10 s required, Netty's QUIC codec has no keep-alive timer, so this peer sends none (30 s idle timeout)",
        "TLS cipher suites: AES-256-GCM first required, BoringSSL's TLS 1.3 order is fixed (AES-128-GCM first on CPUs with AES instructions), so a client of this peer negotiates AES-128-GCM",
    )

    private fun libraries(stack: String): Map<String, String> = if (stack == "grpc") {
        linkedMapOf(
            "io.grpc:grpc-netty-shaded" to v("grpc"),
            "io.grpc:grpc-kotlin-stub" to v("grpc_kotlin"),
            "io.grpc:protoc-gen-grpc-java (build)" to v("grpc_codegen"),
            "com.google.protobuf:protobuf-java" to v("protobuf"),
            "org.jetbrains.kotlinx:kotlinx-coroutines-core" to v("coroutines"),
            "TLS" to "JDK SunJSSE ${System.getProperty("java.runtime.version")}",
        )
    } else {
        linkedMapOf(
            "io.netty:netty-codec-native-quic" to v("netty"),
            "quiche, BoringSSL" to "bundled in netty-codec-native-quic ${v("netty")} linux-x86_64",
            "com.google.protobuf:protobuf-java" to v("protobuf"),
            "org.jetbrains.kotlinx:kotlinx-coroutines-core" to v("coroutines"),
        )
    }

    /**
     * One role's entry for a stack; `tls` and `not_offered` are revision 1.3's. Revision 1.4's
     * `dated` payload and `client_modes` are left out: no stack here carries `dated`
     * ([DATED_REFUSED]), and an absent `client_modes` means official only ([REPLAY_REFUSED]).
     */
    internal fun entry(stack: String, client: Boolean): Map<String, Any> = linkedMapOf<String, Any>(
        "stack" to stack,
        "shapes" to if (client) clientShapes(stack) else serverShapes(stack),
        "load_models" to if (client) LOAD_MODELS else emptyList(),
        "payloads" to PAYLOADS,
        "tls" to tlsValues(stack),
        "libraries" to libraries(stack),
        "settings" to if (stack == "grpc") grpcSettings() else quicSettings(),
        "deviations" to if (stack == "grpc") grpcDeviations else quicDeviations,
    ).apply { SEND_NOT_OFFERED[stack]?.let { put("not_offered", mapOf(SEND to it)) } }

    fun fields(): Map<String, Any?> {
        val home = System.getProperty("rpcarena.home")
        val files = if (home != null) {
            listOf("$home/bin/rpcarena-peer-kotlin", "$home/target/classes", "$home/target/lib")
        } else {
            emptyList()
        }
        val jvmFlags = ManagementFactory.getRuntimeMXBean().inputArguments.filter { !it.startsWith("-Drpcarena.home=") }
        return linkedMapOf(
            "peer" to "rpcarena-peer-kotlin",
            "language" to "kotlin",
            "version" to v("version"),
            "revision" to "1.4",
            "build" to linkedMapOf(
                "toolchain" to "kotlin ${v("kotlin")} (kotlin-maven-plugin), JVM target 17",
                "runtime" to "${System.getProperty("java.vm.name")} ${System.getProperty("java.runtime.version")}",
                "jvm_flags" to jvmFlags.joinToString(" "),
            ),
            "files" to files,
            "allocations" to Allocations.capability,
            "roles" to linkedMapOf(
                "client" to STACKS.map { entry(it, true) },
                "server" to STACKS.map { entry(it, false) },
            ),
        )
    }
}
