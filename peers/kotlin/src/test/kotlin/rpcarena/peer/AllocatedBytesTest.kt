package rpcarena.peer

import java.lang.management.ManagementFactory
import java.util.concurrent.CountDownLatch
import kotlin.concurrent.thread
import kotlin.test.Test
import kotlin.test.assertEquals
import kotlin.test.assertTrue

class AllocatedBytesTest {
    private val bean = ManagementFactory.getThreadMXBean() as com.sun.management.ThreadMXBean

    @Test
    fun declaredAsBytesOnly() {
        val c = Allocations.capability!!
        assertEquals(mapOf("counts" to false, "bytes" to true, "source" to "ThreadMXBean.getThreadAllocatedBytes over live threads"), c)
    }

    @Test
    fun anotherThreadsAllocationsCountAndItsEndDoesNotLowerTheTotal() {
        val meter = AllocatedBytes(bean)
        assertTrue(meter.available)
        val before = meter.read()
        val allocated = CountDownLatch(1)
        val finish = CountDownLatch(1)
        val t = thread(name = "allocator") {
            Blackhole.keep = ByteArray(8 shl 20)
            allocated.countDown()
            finish.await()
        }
        allocated.await()
        val during = meter.read()
        assertTrue(during - before >= 8 shl 20, "$before then $during")
        finish.countDown()
        t.join()
        val after = meter.read()
        assertTrue(after >= during, "the ended thread took the total from $during down to $after")
    }
}
