package rpcarena.peer

import com.google.protobuf.ByteString
import rpcarena.bench.v1.Bench.Item
import rpcarena.bench.v1.Bench.PayloadKind
import rpcarena.bench.v1.Bench.Request
import rpcarena.bench.v1.Bench.Response
import rpcarena.bench.v1.Bench.Structured
import rpcarena.bench.v1.Bench.Summary
import java.util.concurrent.ConcurrentHashMap
import java.util.concurrent.atomic.AtomicLong
import java.util.concurrent.atomic.AtomicReference

// The workload (proto/rpcarena/bench/v1/bench.proto, docs/peer-protocol.md "Payload kinds" and
// "Validation duties"): building payloads, the structured generation rule, and the checks both
// roles make. Pure: no I/O.

const val MAX_FRAME = 16_778_240

/** An operation or message failure with its protocol error code. */
class OpFailure(val code: String, message: String) : Exception(message)

fun invalid(msg: String): Nothing = throw OpFailure("invalid", msg)

private fun decimal(seq: Long): String = java.lang.Long.toUnsignedString(seq)

private fun varintLen(v: Long): Int {
    var x = v
    var n = 1
    while (x and 0x7fL.inv() != 0L) {
        x = x ushr 7
        n++
    }
    return n
}

/** Structured(seq, size) by the generation rule; size 1 and 2 are refused by the callers. */
object StructuredRule {
    private fun itemSize(k: Int): Int {
        val name = 5 + k.toString().length
        return 1 + varintLen((k + 1).toLong()) + 2 + name + 9 + 7 + 6
    }

    private fun item(k: Int): Item = Item.newBuilder()
        .setId((k + 1).toLong())
        .setName("item-$k")
        .setScore((k + 1) * 0.25)
        .addTags("bench")
        .addTags("tag${k % 10}")
        .build()

    private val items = ConcurrentHashMap<Int, Item>()

    fun build(seq: Long, size: Int): Structured {
        if (size == 0) return Structured.getDefaultInstance()
        require(size >= 3) { "a structured payload of $size bytes cannot be built" }
        val b = Structured.newBuilder()
        var used = 0
        val digits = decimal(seq)
        if (16 + digits.length + 3 <= size) {
            b.setCreatedUnixMs(1_700_000_000_000L + java.lang.Long.remainderUnsigned(seq, 1_000_000_000L))
            b.putAttributes("seq", digits)
            used = 16 + digits.length
            var k = 0
            while (true) {
                val s = itemSize(k)
                val cost = 1 + varintLen(s.toLong()) + s
                if (used + cost + 3 > size) break
                b.addItems(items.computeIfAbsent(k) { item(it) })
                used += cost
                k++
            }
        }
        val r = size - used
        val start = java.lang.Long.remainderUnsigned(seq, 26L).toInt()
        val title = CharArray(r - 2) { j -> 'a' + (start + j) % 26 }
        b.setTitle(String(title))
        return b.build()
    }
}

private val zeroCache = ConcurrentHashMap<Int, ByteString>()

fun zeros(size: Int): ByteString =
    if (size == 0) ByteString.EMPTY else zeroCache.computeIfAbsent(size) { ByteString.copyFrom(ByteArray(it)) }

fun allZero(b: ByteString): Boolean {
    val buf = b.asReadOnlyByteBuffer()
    while (buf.remaining() >= 8) if (buf.getLong() != 0L) return false
    while (buf.hasRemaining()) if (buf.get() != 0.toByte()) return false
    return true
}

/** The payload length of a message: zeros: payload bytes; structured: encoded body length. */
fun payloadLength(structured: Boolean, payload: ByteString, body: Structured?): Long =
    if (structured) (body?.serializedSize ?: 0).toLong() else payload.size().toLong()

/** What the client sends and expects, from its configuration. */
class Workload(val structured: Boolean, val requestSize: Int, val responseSize: Int, val messages: Int) {
    private val kind = if (structured) PayloadKind.PAYLOAD_KIND_STRUCTURED else PayloadKind.PAYLOAD_KIND_ZEROS
    private val reqZeros = zeros(requestSize)
    private val respZeros = zeros(responseSize)

    fun request(seq: Long, responseMessages: Int = 0): Request {
        val b = Request.newBuilder().setSeq(seq).setResponseSize(responseSize)
        if (responseMessages != 0) b.setResponseMessages(responseMessages)
        if (structured) {
            b.setPayloadKind(kind)
            if (requestSize > 0) b.setBody(StructuredRule.build(seq, requestSize)) else b.setBody(Structured.getDefaultInstance())
        } else {
            b.setPayload(reqZeros)
        }
        return b.build()
    }

    /** The client's check of a Response (docs/peer-protocol.md "Validation duties"). */
    fun checkResponse(r: Response, expectSeq: Long, what: String) {
        if (r.seq != expectSeq) invalid("$what: seq ${decimal(r.seq)}, expected ${decimal(expectSeq)}")
        checkPayload(r.payload, if (r.hasBody()) r.body else null, r.seq, what)
    }

    private fun checkPayload(payload: ByteString, body: Structured?, seq: Long, what: String) {
        if (structured) {
            if (!payload.isEmpty) invalid("$what: a structured response carries ${payload.size()} payload bytes")
            val got = body ?: Structured.getDefaultInstance()
            if (got != StructuredRule.build(seq, responseSize)) {
                invalid("$what: structured body differs from Structured(${decimal(seq)}, $responseSize)")
            }
        } else {
            if (body != null) invalid("$what: a zeros response carries a structured body")
            if (payload.size() != responseSize) invalid("$what: payload of ${payload.size()} bytes, expected $responseSize")
            if (payload != respZeros && !allZero(payload)) invalid("$what: payload has a non-zero byte")
        }
    }

    /** A client-stream summary for a stream of `count` requests of this configuration. */
    fun checkSummary(s: Summary, count: Long) {
        val lastSeq = count - 1
        if (s.count != count) invalid("summary: count ${decimal(s.count)}, expected $count")
        val bytes = count * requestSize
        if (s.payloadBytes != bytes) invalid("summary: payload_bytes ${decimal(s.payloadBytes)}, expected $bytes")
        if (s.lastSeq != lastSeq) invalid("summary: last_seq ${decimal(s.lastSeq)}, expected $lastSeq")
        checkPayload(s.payload, if (s.hasBody()) s.body else null, lastSeq, "summary")
    }

    val responseBytesPerMessage: Long get() = responseSize.toLong()
    val requestBytesPerMessage: Long get() = requestSize.toLong()
}

/** A request the server refuses: answered with INVALID_ARGUMENT and this message. */
class BadRequest(message: String) : Exception(message)

/** The server's checks and answers (docs/peer-protocol.md "Validation duties", server side). */
object Serve {
    fun bad(msg: String): Nothing = throw BadRequest(msg)

    /** Checks one request on its own: kind, payload, ranges. Returns its payload length; [label] starts every complaint. */
    fun checkRequest(r: Request, index: Long, serverStream: Boolean, label: String = "request $index"): Long {
        val kind = r.payloadKindValue
        if (kind != 0 && kind != 1) bad("$label: unknown payload_kind $kind")
        val rs = r.responseSize
        if (rs < 0 || rs > MAX_PAYLOAD) bad("$label: response_size ${Integer.toUnsignedString(rs)} above $MAX_PAYLOAD")
        if (serverStream) {
            val n = r.responseMessages
            if (n < 1 || n > MAX_MESSAGES) bad("$label: response_messages ${Integer.toUnsignedString(n)}, expected 1 to $MAX_MESSAGES")
        }
        return if (kind == 0) {
            if (r.hasBody()) bad("$label: a zeros request carries a structured body")
            if (!allZero(r.payload)) bad("$label: payload has a non-zero byte")
            r.payload.size().toLong()
        } else {
            if (rs == 1 || rs == 2) bad("$label: response_size $rs cannot be built as a structured payload")
            if (!r.payload.isEmpty) bad("$label: a structured request carries ${r.payload.size()} payload bytes")
            val body = if (r.hasBody()) r.body else Structured.getDefaultInstance()
            val len = body.serializedSize
            if (len == 1 || len == 2) bad("$label: structured body of $len bytes")
            if (body != StructuredRule.build(r.seq, len)) {
                bad("$label: structured body differs from Structured(${decimal(r.seq)}, $len)")
            }
            len.toLong()
        }
    }

    /**
     * Checks a one-way command (shape `send`, revision 1.3) as a unary request, and that it asks
     * for no response bytes. Returns its payload length.
     */
    fun checkCommand(r: Request): Long {
        val len = checkRequest(r, 0, false, "command ${decimal(r.seq)}")
        if (r.responseSize != 0) bad("command ${decimal(r.seq)}: response_size ${Integer.toUnsignedString(r.responseSize)}, expected 0 (a command gets no response)")
        return len
    }

    /** Checks the k-th request of a stream against its first. */
    fun checkStreamed(r: Request, k: Long, first: Request?, firstLen: Long): Long {
        if (r.seq != k) bad("request $k: seq ${decimal(r.seq)}, expected $k")
        val len = checkRequest(r, k, false)
        if (first != null) {
            if (r.payloadKindValue != first.payloadKindValue) bad("request $k: payload_kind changed within the stream")
            if (len != firstLen) bad("request $k: payload length $len, expected $firstLen as the first request")
            if (r.responseSize != first.responseSize) bad("request $k: response_size ${r.responseSize}, expected ${first.responseSize} as the first request")
        }
        return len
    }

    fun response(seq: Long, r: Request): Response {
        val b = Response.newBuilder().setSeq(seq)
        if (r.payloadKindValue == 1) {
            b.setBody(StructuredRule.build(seq, r.responseSize))
        } else if (r.responseSize > 0) {
            b.setPayload(zeros(r.responseSize))
        }
        return b.build()
    }

    fun summary(count: Long, bytes: Long, lastSeq: Long, first: Request): Summary {
        val b = Summary.newBuilder().setCount(count).setPayloadBytes(bytes).setLastSeq(lastSeq)
        if (first.payloadKindValue == 1) {
            b.setBody(StructuredRule.build(lastSeq, first.responseSize))
        } else if (first.responseSize > 0) {
            b.setPayload(zeros(first.responseSize))
        }
        return b.build()
    }
}

/**
 * Rejected calls and the message of the first one (revision 1.3's `first_rejection`), kept
 * before the count goes up, so whoever sees a count above 0 finds the message.
 */
class Rejections {
    val count = AtomicLong()
    private val first = AtomicReference<String?>(null)

    /** Counts a rejected call; the first one's [why] is kept, on one line. */
    fun reject(why: String) {
        first.compareAndSet(null, why.replace('\r', ' ').replace('\n', ' '))
        count.incrementAndGet()
    }

    /** The message of the first rejected call, or null while nothing was rejected. */
    fun first(): String? = if (count.get() > 0) first.get() else null
}

/**
 * Server counters reported in `window` and `stopped`: calls, request and response messages,
 * rejected calls and (revision 1.3) validated one-way commands.
 */
object ServerCounters {
    val rpcs = AtomicLong()
    val requests = AtomicLong()
    val responses = AtomicLong()
    val commands = AtomicLong()
    val rejections = Rejections()

    fun reject(why: String) = rejections.reject(why)

    fun firstRejection(): String? = rejections.first()

    fun asMap() = linkedMapOf(
        "rpcs" to Counter(rpcs.get()), "requests" to Counter(requests.get()),
        "responses" to Counter(responses.get()), "rejected" to Counter(rejections.count.get()),
        "commands" to Counter(commands.get()),
    )
}
