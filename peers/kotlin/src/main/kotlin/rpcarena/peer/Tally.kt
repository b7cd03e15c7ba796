package rpcarena.peer

import org.HdrHistogram.AbstractHistogram
import org.HdrHistogram.PackedHistogram
import java.nio.ByteBuffer
import java.util.Base64

// What a phase records (docs/peer-protocol.md "sample"): latencies in HdrHistograms (V2
// compressed, cookie 0x1c849314, base64 "HISTFAAA..."), per-second intervals, counters and
// failures. One lock per tally: on two cores a record is a short uncontended critical section.

const val HIGHEST_NS = 3_600_000_000_000L

fun newHistogram(): AbstractHistogram = PackedHistogram(1, HIGHEST_NS, 3)

/** HdrHistogram Java's encodeIntoCompressedByteBuffer, base64 with padding. */
fun encodeHistogram(h: AbstractHistogram): String {
    val buf = ByteBuffer.allocate(h.neededByteBufferCapacity + 64)
    val n = h.encodeIntoCompressedByteBuffer(buf, java.util.zip.Deflater.DEFAULT_COMPRESSION)
    return Base64.getEncoder().encodeToString(buf.array().copyOf(n))
}

class Tally(private val t0: Long, windowNs: Long, val openModel: Boolean) {
    val intervals = Array(((windowNs + 999_999_999L) / 1_000_000_000L).toInt()) { newHistogram() }
    val histogram = newHistogram()
    val uncorrected: AbstractHistogram? = if (openModel) newHistogram() else null
    val sendLag: AbstractHistogram? = if (openModel) newHistogram() else null
    var completed = 0L
    var failed = 0L
    var requests = 0L
    var responses = 0L
    var requestBytes = 0L
    var responseBytes = 0L
    val failures = LinkedHashMap<String, Long>()
    var firstFailure: String? = null
    var lastEnd = 0L

    private fun clamp(v: Long) = v.coerceIn(1, HIGHEST_NS)

    private fun interval(startNs: Long): AbstractHistogram? {
        val k = ((startNs - t0) / 1_000_000_000L).toInt()
        return if (k in intervals.indices) intervals[k] else null
    }

    @Synchronized
    fun success(startNs: Long, endNs: Long, reqs: Long, resps: Long, reqBytes: Long, respBytes: Long) {
        val lat = clamp(endNs - startNs)
        histogram.recordValue(lat)
        interval(startNs)?.recordValue(lat)
        completed++
        requests += reqs
        responses += resps
        requestBytes += reqBytes
        responseBytes += respBytes
        if (endNs > lastEnd) lastEnd = endNs
    }

    /** Open model: latency from the intended start, interval by the actual start. */
    @Synchronized
    fun openSuccess(intended: Long, actual: Long, endNs: Long, reqs: Long, resps: Long, reqBytes: Long, respBytes: Long) {
        val lat = clamp(endNs - intended)
        histogram.recordValue(lat)
        interval(actual)?.recordValue(lat)
        uncorrected!!.recordValue(clamp(endNs - actual))
        completed++
        requests += reqs
        responses += resps
        requestBytes += reqBytes
        responseBytes += respBytes
        if (endNs > lastEnd) lastEnd = endNs
    }

    @Synchronized
    fun lag(ns: Long) {
        sendLag!!.recordValue(ns.coerceIn(0, HIGHEST_NS))
    }

    @Synchronized
    fun failure(code: String, message: String, endNs: Long, count: Long = 1) {
        failed += count
        failures[code] = (failures[code] ?: 0L) + count
        if (firstFailure == null) firstFailure = message
        if (endNs > lastEnd) lastEnd = endNs
    }

    @Synchronized
    fun intervalsJson(): List<Map<String, Any>> = intervals.mapIndexed { k, h ->
        mapOf(
            "offset_ns" to Counter(k * 1_000_000_000L),
            "completed" to Counter(h.totalCount),
            "histogram" to encodeHistogram(h),
        )
    }
}

/** Adds a completed send-saturation stream: its messages, and one summary. */
fun Tally.merge(local: Tally, requestBytes: Long, summaryBytes: Long, endNs: Long) {
    synchronized(this) {
        histogram.add(local.histogram)
        for (k in intervals.indices) intervals[k].add(local.intervals[k])
        completed += local.completed
        requests += local.completed
        this.requestBytes += requestBytes
        responses += 1
        responseBytes += summaryBytes
        if (endNs > lastEnd) lastEnd = endNs
    }
}
