package rpcarena.peer

import java.lang.management.ManagementFactory

// Allocated bytes (docs/peer-protocol.md revision 1.2, `allocations` and `allocated_bytes`):
// HotSpot counts the bytes each thread allocates on the heap (com.sun.management.ThreadMXBean).
// JDK 17 has no process-wide total (getTotalThreadAllocatedBytes is new in JDK 21), so a reading
// sums getThreadAllocatedBytes over the live threads. A thread that ends takes its count with it:
// what it allocated after the last reading that saw it is lost. Each reading remembers every
// thread's latest count (thread ids are never reused), so a thread ending between two readings
// does not make the total go backwards. Allocation counts (`allocations`) do not exist here.

/** Bytes allocated so far by the threads this process's readings have seen, never decreasing. */
class AllocatedBytes(private val bean: com.sun.management.ThreadMXBean) {
    private val seen = HashMap<Long, Long>()

    /** The counter is there and on (HotSpot: both by default). */
    val available: Boolean =
        bean.isThreadAllocatedMemorySupported && bean.isThreadAllocatedMemoryEnabled

    /** The total now: every live thread's count, and the last count of every thread that ended. */
    @Synchronized
    fun read(): Long {
        val ids = bean.allThreadIds
        val bytes = bean.getThreadAllocatedBytes(ids)
        for (i in ids.indices) {
            // -1: the thread ended between the two calls; its last count stays.
            if (bytes[i] >= 0) seen[ids[i]] = maxOf(bytes[i], seen[ids[i]] ?: 0L)
        }
        return seen.values.sum()
    }
}

object Allocations {
    private val meter: AllocatedBytes? = (ManagementFactory.getThreadMXBean() as? com.sun.management.ThreadMXBean)
        ?.let { AllocatedBytes(it) }
        ?.takeIf { it.available }

    /** The `capabilities` declaration, or null (then no event carries an allocation field). */
    val capability: Map<String, Any>? = meter?.let {
        linkedMapOf(
            "counts" to false,
            "bytes" to true,
            "source" to "ThreadMXBean.getThreadAllocatedBytes over live threads",
        )
    }

    /** Bytes allocated so far (see [AllocatedBytes]), or null when the JVM does not count them. */
    fun bytes(): Long? = meter?.read()

    /** `allocated_bytes` of a `window` or `stopped` event: the total so far; empty when not counted. */
    fun sinceStart(): Map<String, Any> = bytes()?.let { mapOf("allocated_bytes" to Counter(it)) } ?: emptyMap()
}
