package rpcarena.peer

import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withTimeout

// The client role: connect, validate one operation, warm up, arm, wait for START, measure, print
// the sample, wait for SHUTDOWN.

private const val CONNECT_BOUND_MS = 30_000L
private const val VALIDATE_BOUND_MS = 120_000L

object ClientRole {
    @Volatile
    private var phase = "connect"
    private val lock = Any()

    private fun onLine(cmd: Cmd, text: String): Boolean = synchronized(lock) {
        when (phase) {
            "armed" -> false
            "sampled" -> {
                if (cmd == Cmd.SHUTDOWN) Exit.stopped()
                Exit.error("shutdown", "protocol", misplaced(cmd, text, "after the sample (one sample per client)"))
            }
            else -> {
                if (cmd == Cmd.SHUTDOWN) Exit.stopped()
                Exit.error(phase, "protocol", misplaced(cmd, text, "during $phase"))
            }
        }
    }

    /** A protocol error's message: a window command is a server's, so a client answers it as an unknown line. */
    private fun misplaced(cmd: Cmd, text: String, where: String) = when (cmd) {
        Cmd.WINDOW_START, Cmd.WINDOW_END -> "$text sent to a client (window commands go to servers) $where"
        else -> "${describe(cmd, text)} $where"
    }

    private fun enter(p: String) = synchronized(lock) { phase = p }

    fun run(cfg: ClientConfig) {
        val stdin = Stdin(::onLine)
        stdin.start()
        val connectStart = System.nanoTime()
        val stack = connect(cfg)
        val connectNs = System.nanoTime() - connectStart
        val engine = Engine(cfg, stack)
        validate(stack)
        val warmupCompleted = warmup(cfg, engine)
        arm(cfg, stack, connectNs, warmupCompleted)
        awaitStart(stdin, stack)
        measure(cfg, stack, engine)
        // stdin's thread ends the process on the next command.
        while (true) Thread.sleep(60_000)
    }

    /** Connects the configured stack's client within CONNECT_BOUND_MS; any failure ends the peer. */
    private fun connect(cfg: ClientConfig): ClientStack = try {
        when (cfg.stack) {
            "grpc" -> GrpcClient(cfg).also { c -> runBlocking(Dispatchers.Default) { c.connect(CONNECT_BOUND_MS) } }
            "quic" -> QuicClient.connect(cfg, CONNECT_BOUND_MS)
            else -> Exit.error("connect", "config", "the kotlin peer does not offer the ${cfg.stack} stack as a client")
        }
    } catch (e: OpFailure) {
        Exit.error("connect", e.code, e.message ?: "")
    } catch (e: kotlinx.coroutines.TimeoutCancellationException) {
        Exit.error("connect", "timeout", "connecting to ${cfg.server} took longer than $CONNECT_BOUND_MS ms")
    } catch (e: ArgError) {
        Exit.error("startup", "config", e.message ?: "")
    } catch (e: Throwable) {
        val code = if (isTlsFailure(e)) "tls" else "connect"
        Exit.error("connect", code, "connecting to ${cfg.server} failed: ${causeText(e)}")
    }

    /** One operation that must succeed within VALIDATE_BOUND_MS before anything is measured. */
    private fun validate(stack: ClientStack) {
        enter("validate")
        try {
            runBlocking(Dispatchers.Default) {
                withTimeout(VALIDATE_BOUND_MS) {
                    stack.operation(0)
                }
            }
        } catch (e: OpFailure) {
            Exit.error("validate", e.code, "validation operation: ${e.message}")
        } catch (e: kotlinx.coroutines.TimeoutCancellationException) {
            Exit.error("validate", "timeout", "the validation operation took longer than $VALIDATE_BOUND_MS ms")
        } catch (e: Throwable) {
            Exit.error("validate", "internal", "validation operation: ${causeText(e)}")
        }
    }

    /** The warmup with the configured load model; returns its completed operations. */
    private fun warmup(cfg: ClientConfig, engine: Engine): Long {
        enter("warmup")
        if (cfg.warmupMs <= 0) return 0L
        val r = runBlocking(Dispatchers.Default) {
            engine.run(System.nanoTime(), cfg.warmupMs * 1_000_000L, cfg.drainMs * 1_000_000L)
        }
        val t = r.tally
        if (t.failed > 0) {
            val code = t.failures.keys.first()
            Exit.error("warmup", code, "warmup: ${t.firstFailure}")
        }
        return t.completed
    }

    private fun arm(cfg: ClientConfig, stack: ClientStack, connectNs: Long, warmupCompleted: Long) {
        enter("armed")
        Events.emit(
            "armed",
            mapOf(
                "lanes" to cfg.lanes,
                "connections" to stack.connections,
                "connect_ns" to Counter(connectNs),
                "warmup_completed" to Counter(warmupCompleted),
            ),
        )
    }

    /** Waits for START; SHUTDOWN closes the connections and stops, anything else is an error. */
    private fun awaitStart(stdin: Stdin, stack: ClientStack) {
        val (cmd, text) = stdin.next()
        when (cmd) {
            Cmd.START -> {}
            Cmd.SHUTDOWN -> {
                stack.close()
                Exit.stopped()
            }
            Cmd.WINDOW_START, Cmd.WINDOW_END, Cmd.OTHER -> Exit.error("armed", "protocol", misplaced(cmd, text, "while armed"))
        }
    }

    /** The window from START and its drain; prints the `sample`. */
    private fun measure(cfg: ClientConfig, stack: ClientStack, engine: Engine) {
        enter("measure")
        // Transport statistics: the reading when START arrives, polls through the window, the
        // reading after the drain (docs/peer-protocol.md "Transport statistics").
        val poller = stack.transportProbe()?.let { TransportPoller.start(it) }
        // Bytes allocated from START to the end of the drain (read before t0: a reading takes
        // microseconds, which should not come out of the window).
        val allocatedAtStart = Allocations.bytes()
        val t0 = System.nanoTime()
        val windowNs = cfg.windowMs * 1_000_000L
        val drainNs = cfg.drainMs * 1_000_000L
        val r = runBlocking(Dispatchers.Default) { engine.run(t0, windowNs, drainNs) }
        val allocatedAtEnd = Allocations.bytes()
        val sample = sampleFields(cfg, r, windowNs, drainNs, t0)
        poller?.finish()?.let { sample["transport"] = it }
        if (allocatedAtStart != null && allocatedAtEnd != null) {
            sample["allocated_bytes"] = Counter(allocatedAtEnd - allocatedAtStart)
        }
        synchronized(lock) {
            Events.emit("sample", sample)
            phase = "sampled"
        }
    }

    internal fun sampleFields(cfg: ClientConfig, r: PhaseResult, windowNs: Long, drainNs: Long, t0: Long): MutableMap<String, Any?> {
        val t = r.tally
        val deadline = t0 + windowNs
        val bound = if (cfg.load == "send-saturation") minOf(drainNs, cfg.settleMs * 1_000_000L) else drainNs
        val drain = (t.lastEnd - deadline).coerceIn(0, bound)
        val m = LinkedHashMap<String, Any?>()
        synchronized(t) {
            m["completed"] = Counter(t.completed)
            m["failed"] = Counter(t.failed)
            m["requests"] = Counter(t.requests)
            m["responses"] = Counter(t.responses)
            m["request_bytes"] = Counter(t.requestBytes)
            m["response_bytes"] = Counter(t.responseBytes)
            m["window_ns"] = Counter(windowNs)
            m["drain_ns"] = Counter(drain)
            m["histogram"] = encodeHistogram(t.histogram)
            if (t.failed > 0) {
                m["failures"] = t.failures.mapValues { Counter(it.value) }
                m["first_failure"] = t.firstFailure ?: "unknown"
            }
            m["load"] = cfg.load
        }
        m["intervals"] = t.intervalsJson()
        when (cfg.load) {
            "window", "backpressure" -> m["max_in_flight"] = Counter(r.maxInFlight)
            "send-saturation" -> {
                m["max_in_flight"] = Counter(r.maxInFlight)
                m["sent"] = Counter(r.sent)
                r.received?.let { m["received"] = Counter(it) }
            }
            "open" -> {
                m["max_in_flight"] = Counter(r.maxInFlight)
                m["offered"] = Counter(r.offered)
                m["target_rate"] = cfg.rate
                val lag = t.sendLag!!
                val behind = t.completed + t.failed < r.offered || (lag.totalCount > 0 && lag.getValueAtPercentile(99.0) > 1_000_000L)
                m["fell_behind"] = behind
                m["uncorrected_histogram"] = encodeHistogram(t.uncorrected!!)
                m["send_lag_histogram"] = encodeHistogram(lag)
            }
        }
        return m
    }
}

