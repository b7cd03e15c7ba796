package rpcarena.peer

// Command-line arguments (docs/peer-protocol.md "Commands"): `--name value` pairs in any order;
// an unknown, missing, repeated or out-of-range argument is refused with a message that names it.
// Pure: returns a configuration or throws ArgError; reading files is the caller's job.

class ArgError(message: String) : Exception(message)

val STACKS = listOf("grpc", "quic")
val ALL_STACKS = listOf("grpc", "quic", "tcp")

/** The request/response shapes this peer drives as a client on both stacks. */
val SHAPES = listOf("unary", "client_stream", "server_stream", "bidi")

/** The one-way shape (revision 1.3): grpc's `Command` RPC; the native framing has no one-way message. */
const val SEND = "send"

/** Why a stack cannot carry `send`, for `capabilities`' `not_offered` and the client's refusal. */
val SEND_NOT_OFFERED = mapOf(
    "quic" to "the native framing answers every request with a STATUS frame; a one-way command would need a frame type it does not have",
)

/**
 * The shapes its servers answer: pingpong (revision 1.2) is the Bidi RPC in lock-step, which both
 * servers serve because their bidi handlers answer each request as soon as it is validated.
 */
val SERVER_SHAPES = SHAPES + "pingpong"

/** The shapes a stack's client drives: `send` where the stack has a one-way message. */
fun clientShapes(stack: String): List<String> = if (stack in SEND_NOT_OFFERED) SHAPES else SHAPES + SEND

/** The shapes a stack's server answers. */
fun serverShapes(stack: String): List<String> = if (stack in SEND_NOT_OFFERED) SERVER_SHAPES else SERVER_SHAPES + SEND

/** The `--tls` values a stack takes (revision 1.3): QUIC has TLS 1.3 inside. */
fun tlsValues(stack: String): List<String> = if (stack == "quic") listOf("on") else listOf("on", "off")
val LOAD_MODELS = listOf("closed", "window", "backpressure", "send-saturation", "open")
val PAYLOADS = listOf("zeros", "structured")

/**
 * Why no stack of this peer carries `--payload dated` (revision 1.4): it is the JSON stacks'
 * procedure, so `capabilities` leaves it out of `payloads` and the client refuses it.
 */
const val DATED_REFUSED = "dated is the JSON stacks' procedure (the oRPC benchmarks' nested.procedure_1, revision 1.4) " +
    "and no stack of the kotlin peer carries JSON: grpc carries protobuf messages, quic the native framing"

/** The one `--client-mode` (revision 1.4) this peer's clients take; `capabilities` lists no `client_modes`. */
const val OFFICIAL = "official"

/** Why no client of this peer takes `--client-mode replay` (revision 1.4). */
const val REPLAY_REFUSED = "replay stands a lean client in for a library's official client, and the grpc-kotlin " +
    "stubs and the native quic client are the only clients this peer's stacks have"
const val MAX_PAYLOAD = 16_777_216
const val MAX_MESSAGES = 1_000_000
const val MAX_STREAMS = 1000
private const val MAX_MS = 4_294_967_295L

data class HostPort(val host: String, val port: Int) {
    override fun toString() = if (host.contains(':')) "[$host]:$port" else "$host:$port"
}

/** A server's configuration; [cert] and [key] are null exactly when [tls] is false (`--tls off`). */
data class ServerConfig(val stack: String, val listen: HostPort, val tls: Boolean, val cert: String?, val key: String?)

/** A client's configuration; [serverName] and [ca] are null exactly when [tls] is false. */
data class ClientConfig(
    val stack: String,
    val server: HostPort,
    val tls: Boolean,
    val serverName: String?,
    val ca: String?,
    val shape: String,
    val concurrency: Int,
    val requestSize: Int,
    val responseSize: Int,
    val messagesPerStream: Int,
    val load: String,
    val payload: String,
    val warmupMs: Long,
    val windowMs: Long,
    val drainMs: Long,
    val inFlight: Int = 0,
    val maxInFlight: Int = 0,
    val streams: Int = 0,
    val settleMs: Long = 0,
    val rate: Double = 0.0,
    val arrival: String = "constant",
    val seed: ULong = 0u,
) {
    /** The model's lanes: --in-flight (window), --streams (send-saturation), else --concurrency. */
    val lanes: Int
        get() = when (load) {
            "window" -> inFlight
            "send-saturation" -> streams
            else -> concurrency
        }
    val structured: Boolean get() = payload == "structured"

    /** The one-way shape: requests carry response_size 0 and get no response message. */
    val send: Boolean get() = shape == SEND

    /** The response_size every request asks for: 0 for `send`, whose --response-size is ignored. */
    val askedResponseSize: Int get() = if (send) 0 else responseSize
}

private val DIGITS = Regex("^[0-9]+$")

private fun integer(name: String, text: String, min: Long, max: Long): Long {
    if (!DIGITS.matches(text) || text.length > 19) {
        throw ArgError("$name \"$text\": expected a whole decimal number from $min to $max")
    }
    val v = text.toLong()
    if (v < min || v > max) throw ArgError("$name $text is out of range: expected $min to $max")
    return v
}

private fun oneOf(name: String, text: String, choices: List<String>): String {
    if (text !in choices) throw ArgError("$name \"$text\": expected one of ${choices.joinToString(", ")}")
    return text
}

/**
 * A client shape of [stack]; a shape only the servers answer (pingpong) and `send` on a stack
 * without a one-way message are refused with the reason.
 */
private fun clientShape(name: String, text: String, stack: String): String {
    val shapes = clientShapes(stack)
    if (text in SERVER_SHAPES && text !in SHAPES) {
        throw ArgError("$name $text: this client does not drive the $text shape (its servers answer it); expected one of ${shapes.joinToString(", ")}")
    }
    if (text == SEND && text !in shapes) {
        throw ArgError("$name send is not offered on --stack $stack: ${SEND_NOT_OFFERED[stack]}")
    }
    return oneOf(name, text, shapes)
}

/** `--payload`, default zeros; `dated` (revision 1.4) is refused with the reason. */
private fun payload(name: String, text: String?, stack: String): String {
    if (text == "dated") throw ArgError("$name dated is not offered on --stack $stack: $DATED_REFUSED; use zeros or structured")
    return oneOf(name, text ?: "zeros", PAYLOADS)
}

/** `--client-mode` (revision 1.4), default official: replay and unknown values are refused, saying what to give. */
private fun clientMode(name: String, text: String?, stack: String): String = when (text) {
    null, OFFICIAL -> OFFICIAL
    "replay" -> throw ArgError("$name replay is not offered on --stack $stack: $REPLAY_REFUSED; leave $name out or give official")
    else -> throw ArgError("$name \"$text\": expected official or replay, and the kotlin peer takes official only; leave $name out or give official")
}

private fun rate(name: String, text: String): Double {
    val v = if (Regex("^[0-9]+(\\.[0-9]+)?$").matches(text)) text.toDouble() else Double.NaN
    if (!(v > 0 && v <= 10_000_000)) {
        throw ArgError("$name \"$text\": expected a decimal number above 0 and at most 10000000")
    }
    return v
}

private fun seed(name: String, text: String): ULong {
    if (!DIGITS.matches(text)) throw ArgError("$name \"$text\": expected a whole decimal number from 0 to 2^64-1")
    return text.toULongOrNull() ?: throw ArgError("$name \"$text\": expected a whole decimal number from 0 to 2^64-1")
}

fun hostPort(name: String, text: String, minPort: Int): HostPort {
    val m = Regex("^(?:\\[([^\\]]+)\\]|([^:\\[\\]]+)):([0-9]+)$").find(text)
        ?: throw ArgError("$name \"$text\": expected HOST:PORT (IPv6 as [ADDRESS]:PORT)")
    val host = m.groupValues[1].ifEmpty { m.groupValues[2] }
    val port = integer("$name port", m.groupValues[3], minPort.toLong(), 65535).toInt()
    return HostPort(host, port)
}

private fun nonEmpty(name: String, text: String): String {
    if (text.isEmpty()) throw ArgError("$name: expected a value, got an empty string")
    return text
}

/**
 * An argument: its roles, the load model it belongs to (null: every model), whether it may be
 * left out, and whether it belongs to TLS (given with `--tls on`, refused with `--tls off`).
 */
private class Spec(val roles: Set<String>, val model: String? = null, val optional: Boolean = false, val tls: Boolean = false)

private val SPEC = linkedMapOf(
    "--stack" to Spec(setOf("server", "client")),
    "--listen" to Spec(setOf("server")),
    "--tls" to Spec(setOf("server", "client"), optional = true),
    "--cert" to Spec(setOf("server"), tls = true),
    "--key" to Spec(setOf("server"), tls = true),
    "--server" to Spec(setOf("client")),
    "--server-name" to Spec(setOf("client"), tls = true),
    "--ca" to Spec(setOf("client"), tls = true),
    "--shape" to Spec(setOf("client")),
    "--concurrency" to Spec(setOf("client")),
    "--request-size" to Spec(setOf("client")),
    "--response-size" to Spec(setOf("client")),
    "--messages-per-stream" to Spec(setOf("client")),
    "--load" to Spec(setOf("client")),
    "--payload" to Spec(setOf("client"), optional = true),
    "--client-mode" to Spec(setOf("client"), optional = true),
    "--warmup-ms" to Spec(setOf("client")),
    "--window-ms" to Spec(setOf("client")),
    "--drain-ms" to Spec(setOf("client")),
    "--in-flight" to Spec(setOf("client"), model = "window"),
    "--max-in-flight" to Spec(setOf("client"), model = "backpressure"),
    "--streams" to Spec(setOf("client"), model = "send-saturation"),
    "--settle-ms" to Spec(setOf("client"), model = "send-saturation"),
    "--rate" to Spec(setOf("client"), model = "open"),
    "--arrival" to Spec(setOf("client"), model = "open", optional = true),
    "--seed" to Spec(setOf("client"), model = "open", optional = true),
)

/** Collects `--name value` pairs: unknown, repeated and valueless arguments are refused. */
private fun collect(role: String, argv: List<String>): Map<String, String> {
    val values = LinkedHashMap<String, String>()
    var i = 0
    while (i < argv.size) {
        val name = argv[i]
        val spec = SPEC[name]
        if (spec == null || role !in spec.roles) throw ArgError("unknown argument \"$name\" for the $role role")
        if (values.containsKey(name)) throw ArgError("$name is given twice")
        if (i + 1 >= argv.size) throw ArgError("$name needs a value")
        values[name] = argv[i + 1]
        i += 2
    }
    val load = values["--load"]
    val tls = tlsOn(values["--tls"])
    for ((name, spec) in SPEC) {
        if (role !in spec.roles) continue
        if (spec.tls && !tls) {
            if (values.containsKey(name)) throw ArgError("$name does not apply to --tls off")
            continue
        }
        val applies = spec.model == null || spec.model == load
        if (!applies && values.containsKey(name)) {
            throw ArgError("$name does not apply to --load ${load ?: "(missing)"}")
        }
        if (applies && !spec.optional && !values.containsKey(name)) {
            throw ArgError(if (spec.tls) "$name is missing (needed with --tls on, the default)" else "$name is missing")
        }
    }
    return values
}

/** `--tls on|off` (revision 1.3), default on. */
private fun tlsOn(text: String?): Boolean = oneOf("--tls", text ?: "on", listOf("on", "off")) == "on"

/** The stack, refused with `--tls off` where it has no plaintext form (QUIC). */
private fun stackFor(v: Map<String, String>): String {
    val stack = oneOf("--stack", v["--stack"]!!, ALL_STACKS)
    if (!tlsOn(v["--tls"]) && "off" !in tlsValues(stack)) {
        throw ArgError("--tls off: QUIC has TLS 1.3 inside; --tls off does not apply to --stack $stack")
    }
    return stack
}

fun parseServer(argv: List<String>): ServerConfig {
    val v = collect("server", argv)
    return ServerConfig(
        stack = stackFor(v),
        listen = hostPort("--listen", v["--listen"]!!, 0),
        tls = tlsOn(v["--tls"]),
        cert = v["--cert"]?.let { nonEmpty("--cert", it) },
        key = v["--key"]?.let { nonEmpty("--key", it) },
    )
}

fun parseClient(argv: List<String>): ClientConfig {
    val v = collect("client", argv)
    fun ms(n: String, min: Long = 0) = integer(n, v[n]!!, min, MAX_MS)
    val load = oneOf("--load", v["--load"]!!, LOAD_MODELS)
    val stack = stackFor(v)
    clientMode("--client-mode", v["--client-mode"], stack)
    val c = ClientConfig(
        stack = stack,
        server = hostPort("--server", v["--server"]!!, 1),
        tls = tlsOn(v["--tls"]),
        serverName = v["--server-name"]?.let { nonEmpty("--server-name", it) },
        ca = v["--ca"]?.let { nonEmpty("--ca", it) },
        shape = clientShape("--shape", v["--shape"]!!, stack),
        concurrency = integer("--concurrency", v["--concurrency"]!!, 1, 10_000).toInt(),
        requestSize = integer("--request-size", v["--request-size"]!!, 0, MAX_PAYLOAD.toLong()).toInt(),
        responseSize = integer("--response-size", v["--response-size"]!!, 0, MAX_PAYLOAD.toLong()).toInt(),
        messagesPerStream = integer("--messages-per-stream", v["--messages-per-stream"]!!, 1, MAX_MESSAGES.toLong()).toInt(),
        load = load,
        payload = payload("--payload", v["--payload"], stack),
        warmupMs = ms("--warmup-ms"),
        windowMs = ms("--window-ms", 1),
        drainMs = ms("--drain-ms"),
        inFlight = v["--in-flight"]?.let { integer("--in-flight", it, 1, 100_000).toInt() } ?: 0,
        maxInFlight = v["--max-in-flight"]?.let { integer("--max-in-flight", it, 1, 1_000_000).toInt() } ?: 0,
        streams = v["--streams"]?.let { integer("--streams", it, 1, MAX_STREAMS.toLong()).toInt() } ?: 0,
        settleMs = v["--settle-ms"]?.let { integer("--settle-ms", it, 0, MAX_MS) } ?: 0,
        rate = v["--rate"]?.let { rate("--rate", it) } ?: 0.0,
        arrival = v["--arrival"]?.let { oneOf("--arrival", it, listOf("constant", "poisson")) } ?: "constant",
        seed = v["--seed"]?.let { seed("--seed", it) } ?: 0u,
    )
    if (c.load == "send-saturation" && c.shape != "client_stream" && !c.send) {
        throw ArgError("--load send-saturation needs --shape client_stream or send, not ${c.shape}")
    }
    if (c.structured) {
        // --response-size is ignored by send (its requests ask for 0 bytes), so it is not checked there.
        val sizes = listOf("--request-size" to c.requestSize) + if (c.send) emptyList() else listOf("--response-size" to c.responseSize)
        for ((flag, size) in sizes) {
            if (size == 1 || size == 2) {
                throw ArgError("$flag $size cannot be built as a structured payload: use 0 or at least 3")
            }
        }
    }
    return c
}
