package rpcarena.peer

import java.util.concurrent.ScheduledExecutorService
import java.util.concurrent.ScheduledFuture
import java.util.concurrent.TimeUnit

// Transport statistics of the client's connections over the window (the `sample` event's optional
// `transport` object, docs/peer-protocol.md "Transport statistics"). A TransportProbe reads every
// connection of a stack (GrpcStack.kt: TCP_INFO through Netty's EpollSocketChannel.tcpInfo();
// Quic.kt: the QUIC codec's collectStats()/collectPathStats()). TransportTracker (pure) turns the
// reading at START, the polls during the window and the reading at its end into the object:
// counters are end minus start per connection, summed; the congestion window is summed over
// connections at each poll (its minimum and mean over the polls); RTTs are means over connections
// at the end. TransportPoller is the thin shell that polls every POLL_INTERVAL_MS on the probe's
// executor (the connection's own event loop).

/** How often the gauges are polled during the window, as the Rust peer: 5 ms. */
const val POLL_INTERVAL_MS = 5L

/** One connection at one moment: cumulative counters and gauges; null where the library gives nothing. */
data class ConnReading(
    /** Stable id of the connection within the probe. */
    val id: Long,
    val packetsSent: Long? = null,
    val bytesSent: Long? = null,
    val retransmitted: Long? = null,
    val lost: Long? = null,
    /** TCP: whether the sender is in loss recovery or the loss state right now. */
    val inRecovery: Boolean? = null,
    val cwndBytes: Long? = null,
    val srttNs: Long? = null,
    val deliveryRateBps: Long? = null,
)

/** What the polls add up to while the window runs (pure; not thread-safe: the poller locks it). */
class TransportTracker(private val transport: String, private val start: List<ConnReading>) {
    private var polls = 0L
    private var cwndMin: Long? = null
    private var cwndSum = 0L
    private var cwndPolls = 0L
    private val recovering = HashMap<Long, Boolean>().apply {
        for (c in start) put(c.id, c.inRecovery ?: false)
    }
    private var recoveryEntries = 0L

    /** One poll during the window. */
    fun observe(reading: List<ConnReading>) {
        polls++
        if (reading.isNotEmpty() && reading.all { it.cwndBytes != null }) {
            val cwnd = reading.sumOf { it.cwndBytes!! }
            cwndPolls++
            cwndSum += cwnd
            cwndMin = minOf(cwndMin ?: cwnd, cwnd)
        }
        for (c in reading) {
            val now = c.inRecovery ?: continue
            val was = recovering.put(c.id, now)
            if (now && was != true) recoveryEntries++
        }
    }

    /** The window's `transport` object (counters as decimal strings), from the reading at its end (also a poll). */
    fun finish(end: List<ConnReading>): Map<String, Any> {
        observe(end)
        val before = start.associateBy { it.id }
        // End minus start per connection, summed; absent when any connection lacks it (or there is
        // none). A connection new in the window counts from zero.
        fun delta(f: (ConnReading) -> Long?): Long? {
            if (end.isEmpty()) return null
            var sum = 0L
            for (c in end) {
                val now = f(c) ?: return null
                val then = before[c.id]?.let { f(it) ?: return null } ?: 0L
                sum += maxOf(0L, now - then)
            }
            return sum
        }
        fun sum(f: (ConnReading) -> Long?): Long? {
            if (end.isEmpty()) return null
            var s = 0L
            for (c in end) s += f(c) ?: return null
            return s
        }
        fun mean(f: (ConnReading) -> Long?): Long? = sum(f)?.let { it / end.size }
        val tcp = end.isNotEmpty() && end.all { it.inRecovery != null }
        val m = LinkedHashMap<String, Any>()
        m["transport"] = transport
        m["connections"] = Counter(end.size.toLong())
        m["polls"] = Counter(polls)
        fun put(key: String, v: Long?) {
            if (v != null) m[key] = Counter(v)
        }
        put("packets_sent", delta { it.packetsSent })
        put("bytes_sent", delta { it.bytesSent })
        put("retransmitted", delta { it.retransmitted })
        put("lost", delta { it.lost })
        if (tcp) put("congestion_events", recoveryEntries)
        put("cwnd_bytes", sum { it.cwndBytes })
        put("cwnd_min_bytes", cwndMin)
        if (cwndPolls > 0) put("cwnd_mean_bytes", cwndSum / cwndPolls)
        put("srtt_ns", mean { it.srttNs })
        put("delivery_rate_bps", sum { it.deliveryRateBps })
        return m
    }
}

/** Reads every connection of a client stack; [read] runs on [executor] only. */
interface TransportProbe {
    /** `tcp` or `quic`. */
    val transport: String

    /** Where the probe reads (the connection's event loop). */
    val executor: ScheduledExecutorService

    fun read(): List<ConnReading>
}

/** Polls a probe through the window on its executor. */
class TransportPoller private constructor(private val probe: TransportProbe, private val tracker: TransportTracker) {
    private var task: ScheduledFuture<*>? = null

    companion object {
        /** Reads the start and begins polling (call it when START arrives); null when the probe cannot read. */
        fun start(probe: TransportProbe): TransportPoller? = try {
            val first = probe.executor.submit<List<ConnReading>> { probe.read() }.get(1, TimeUnit.SECONDS)
            TransportPoller(probe, TransportTracker(probe.transport, first)).also { p ->
                p.task = probe.executor.scheduleAtFixedRate(p::poll, POLL_INTERVAL_MS, POLL_INTERVAL_MS, TimeUnit.MILLISECONDS)
            }
        } catch (e: Exception) {
            log("no transport statistics: ${causeText(e)}")
            null
        }
    }

    private fun poll() {
        val reading = try { probe.read() } catch (e: Exception) { return }
        synchronized(tracker) { tracker.observe(reading) }
    }

    /** Stops polling and reads the end; null (the field is left out) when the end cannot be read. */
    fun finish(): Map<String, Any>? = try {
        task?.cancel(false)
        val end = probe.executor.submit<List<ConnReading>> { probe.read() }.get(1, TimeUnit.SECONDS)
        synchronized(tracker) { tracker.finish(end) }
    } catch (e: Exception) {
        log("no transport statistics at the end of the window: ${causeText(e)}")
        null
    }
}
