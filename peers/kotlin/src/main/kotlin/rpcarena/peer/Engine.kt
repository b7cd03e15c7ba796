package rpcarena.peer

import kotlinx.coroutines.CancellationException
import kotlinx.coroutines.TimeoutCancellationException
import kotlinx.coroutines.channels.Channel
import kotlinx.coroutines.coroutineScope
import kotlinx.coroutines.launch
import kotlinx.coroutines.sync.Semaphore
import kotlinx.coroutines.withTimeout
import kotlinx.coroutines.yield
import java.util.SplittableRandom
import java.util.concurrent.atomic.AtomicBoolean
import java.util.concurrent.atomic.AtomicLong
import java.util.concurrent.locks.LockSupport
import kotlin.time.Duration.Companion.nanoseconds

// The load models (docs/peer-protocol.md "Load models") on coroutines: one coroutine per lane
// (closed, window, open), per operation (backpressure), per stream (send-saturation). Every model
// obeys the admission rule: nothing starts at or after the deadline; admitted operations may end
// until deadline + drain and fail with `timeout` after that.

/** A client stack: one connection (grpc, quic) that every lane shares. */
interface ClientStack {
    val connections: Int

    /** One operation of the configured shape, every response checked; throws OpFailure. */
    suspend fun operation(seq: Long)

    /** Suspends until the transport accepts another call (backpressure). */
    suspend fun ready() {}

    /**
     * One send-saturation stream: sends requests while now < deadline, calling [accepted] with the
     * time each message was taken by the transport, then ends the stream and checks the summary.
     * Returns the confirmed count; throws OpFailure.
     */
    suspend fun saturate(deadline: Long, accepted: (Long) -> Unit): Long

    /** Reads the connections' transport statistics; null where the library gives none. */
    fun transportProbe(): TransportProbe? = null

    fun close()
}

/**
 * What a phase did beyond its tally. [received] is the summaries' confirmed count of a
 * send-saturation on client streams; null on `send`, where only the server knows what arrived.
 */
class PhaseResult(val tally: Tally, val maxInFlight: Long, val offered: Long, val sent: Long, val received: Long?)

class Engine(private val cfg: ClientConfig, private val stack: ClientStack) {
    private val n = cfg.messagesPerStream.toLong()
    private val reqs = if (cfg.shape == "client_stream" || cfg.shape == "bidi") n else 1L

    /** Response messages per operation; `send` counts its acknowledgement (gRPC's Empty), of 0 bytes. */
    private val resps = if (cfg.shape == "server_stream" || cfg.shape == "bidi") n else 1L
    private val reqBytes = reqs * cfg.requestSize
    private val respBytes = resps * cfg.askedResponseSize

    private val inFlight = AtomicLong()
    private val maxInFlight = AtomicLong()

    private fun enter() {
        val v = inFlight.incrementAndGet()
        while (true) {
            val m = maxInFlight.get()
            if (v <= m || maxInFlight.compareAndSet(m, v)) break
        }
    }

    /** Runs one operation; records it; returns false when it failed. */
    private suspend fun runOne(seq: Long, start: Long, drainEnd: Long, tally: Tally, intended: Long = -1): Boolean {
        enter()
        try {
            val left = drainEnd - System.nanoTime()
            if (left <= 0) throw DrainPassed()
            withTimeout(left.nanoseconds) { stack.operation(seq) }
            val end = System.nanoTime()
            if (intended >= 0) {
                tally.openSuccess(intended, start, end, reqs, resps, reqBytes, respBytes)
            } else {
                tally.success(start, end, reqs, resps, reqBytes, respBytes)
            }
            return true
        } catch (e: TimeoutCancellationException) {
            tally.failure("timeout", "operation $seq did not finish within the drain bound", drainEnd)
        } catch (e: DrainPassed) {
            tally.failure("timeout", "operation $seq did not finish within the drain bound", drainEnd)
        } catch (e: OpFailure) {
            tally.failure(e.code, "operation $seq: ${e.message}", System.nanoTime())
        } catch (e: CancellationException) {
            throw e
        } catch (e: Throwable) {
            tally.failure("internal", "operation $seq: ${causeText(e)}", System.nanoTime())
        } finally {
            inFlight.decrementAndGet()
        }
        return false
    }

    private class DrainPassed : Exception()

    /** Runs the configured model from t0 for windowNs; admitted work may run drainNs longer. */
    suspend fun run(t0: Long, windowNs: Long, drainNs: Long): PhaseResult {
        val deadline = t0 + windowNs
        val drainEnd = deadline + drainNs
        val tally = Tally(t0, windowNs, cfg.load == "open")
        maxInFlight.set(0)
        var offered = 0L
        var sent = 0L
        var received: Long? = null
        val settleEnd = deadline + minOf(drainNs, cfg.settleMs * 1_000_000L)
        when {
            cfg.load == "closed" || cfg.load == "window" -> lanes(cfg.lanes, deadline, drainEnd, tally)
            cfg.load == "backpressure" -> backpressure(deadline, drainEnd, tally)
            cfg.load == "open" -> offered = open(t0, deadline, drainEnd, tally)
            cfg.load == "send-saturation" && cfg.send -> {
                // S lanes, one command in flight each, as the closed model until the settle bound.
                val opened = AtomicLong()
                lanes(cfg.streams, deadline, settleEnd, tally) { opened.incrementAndGet() }
                sent = synchronized(tally) { tally.completed + tally.failed }
                return PhaseResult(tally, opened.get(), 0, sent, null)
            }
            cfg.load == "send-saturation" -> {
                val r = saturation(t0, deadline, settleEnd, tally)
                sent = r.first
                received = r.second
            }
        }
        return PhaseResult(tally, maxInFlight.get(), offered, sent, received)
    }

    /** [lanes] lanes, one operation in flight each; [opened] is called when a lane starts its first. */
    private suspend fun lanes(lanes: Int, deadline: Long, drainEnd: Long, tally: Tally, opened: () -> Unit = {}) = coroutineScope {
        for (i in 0 until lanes) {
            launch {
                var k = 0L
                while (true) {
                    val start = System.nanoTime()
                    if (start >= deadline) break
                    if (k == 0L) opened()
                    val seq = i + k * lanes
                    k++
                    if (!runOne(seq, start, drainEnd, tally)) break
                }
            }
        }
    }

    private suspend fun backpressure(deadline: Long, drainEnd: Long, tally: Tally) = coroutineScope {
        val cap = Semaphore(cfg.maxInFlight)
        val failed = AtomicBoolean(false)
        var seq = 0L
        while (!failed.get()) {
            if (System.nanoTime() >= deadline) break
            cap.acquire()
            stack.ready()
            val start = System.nanoTime()
            if (start >= deadline || failed.get()) {
                cap.release()
                break
            }
            val s = seq++
            launch {
                try {
                    if (!runOne(s, start, drainEnd, tally)) failed.set(true)
                } finally {
                    cap.release()
                }
            }
        }
    }

    /**
     * Open loop without coordinated omission: a generator thread keeps the schedule and hands each
     * intended start to the lanes up to 150 µs early; the lane waits for the exact moment.
     */
    private suspend fun open(t0: Long, deadline: Long, drainEnd: Long, tally: Tally): Long = coroutineScope {
        val starts = Channel<Long>(Channel.UNLIMITED)
        val offered = AtomicLong()
        val stop = AtomicBoolean(false)
        val nextSeq = AtomicLong()
        val rate = cfg.rate
        val gapNs = 1e9 / rate
        val lead = minOf(150_000L, (gapNs / 2).toLong())
        val generator = Thread({
            val rng = SplittableRandom(cfg.seed.toLong())
            var i = 0L
            var poissonAt = 0.0
            while (!stop.get()) {
                val offset = if (cfg.arrival == "poisson") {
                    if (i > 0) poissonAt += -Math.log(1.0 - rng.nextDouble()) / rate * 1e9
                    poissonAt
                } else {
                    Math.floor(i * gapNs)
                }
                val intended = t0 + offset.toLong()
                if (intended >= deadline || offset >= 9.2e18) break
                i++
                offered.incrementAndGet()
                val handAt = intended - lead
                while (!stop.get()) {
                    val rem = handAt - System.nanoTime()
                    if (rem <= 0) break
                    if (rem > 80_000) LockSupport.parkNanos(rem - 60_000) else Thread.onSpinWait()
                }
                starts.trySend(intended)
            }
            starts.close()
        }, "open-generator")
        generator.isDaemon = true
        generator.start()
        try {
            coroutineScope {
                for (lane in 0 until cfg.concurrency) {
                    launch {
                        for (intended in starts) {
                            while (System.nanoTime() < intended) yield()
                            val actual = System.nanoTime()
                            if (actual >= deadline) continue
                            tally.lag(actual - intended)
                            val seq = nextSeq.getAndIncrement()
                            runOne(seq, actual, drainEnd, tally, intended)
                        }
                    }
                }
            }
        } finally {
            stop.set(true)
            generator.join(2000)
        }
        offered.get()
    }

    /** Send-saturation on client streams: S streams; an operation is one request message. */
    private suspend fun saturation(t0: Long, deadline: Long, settleEnd: Long, tally: Tally): Pair<Long, Long> {
        val sentAll = AtomicLong()
        val receivedAll = AtomicLong()
        coroutineScope {
            for (i in 0 until cfg.streams) {
                launch {
                    if (System.nanoTime() >= deadline) return@launch
                    enter()
                    val local = Tally(t0, deadline - t0, false)
                    var sent = 0L
                    var readyAt = System.nanoTime()
                    try {
                        val left = settleEnd - System.nanoTime()
                        if (left <= 0) throw DrainPassed()
                        val count = withTimeout(left.nanoseconds) {
                            stack.saturate(deadline) { acceptedAt ->
                                local.success(readyAt, acceptedAt, 0, 0, 0, 0)
                                readyAt = acceptedAt
                                sent++
                            }
                        }
                        val end = System.nanoTime()
                        sentAll.addAndGet(sent)
                        receivedAll.addAndGet(count)
                        tally.merge(local, count * cfg.requestSize, cfg.responseSize.toLong(), end)
                    } catch (e: TimeoutCancellationException) {
                        sentAll.addAndGet(sent)
                        tally.failure("timeout", "stream $i: no summary within the settle bound", settleEnd, maxOf(sent, 1))
                    } catch (e: DrainPassed) {
                        sentAll.addAndGet(sent)
                        tally.failure("timeout", "stream $i: no summary within the settle bound", settleEnd, maxOf(sent, 1))
                    } catch (e: OpFailure) {
                        sentAll.addAndGet(sent)
                        tally.failure(e.code, "stream $i: ${e.message}", System.nanoTime(), maxOf(sent, 1))
                    } catch (e: CancellationException) {
                        throw e
                    } catch (e: Throwable) {
                        sentAll.addAndGet(sent)
                        tally.failure("internal", "stream $i: ${causeText(e)}", System.nanoTime(), maxOf(sent, 1))
                    }
                }
            }
        }
        return Pair(sentAll.get(), receivedAll.get())
    }
}
