package rpcarena.peer

import kotlin.test.Test
import kotlin.test.assertEquals
import kotlin.test.assertFalse
import kotlin.test.assertNull

class TransportTest {
    private fun tcp(id: Long, retrans: Long, cwnd: Long, recovering: Boolean) =
        ConnReading(id = id, retransmitted = retrans, inRecovery = recovering, cwndBytes = cwnd, srttNs = 30_000_000)

    private fun text(m: Map<String, Any>) = m.mapValues { it.value.toString() }

    @Test
    fun countersAreWindowDifferencesSummedOverConnections() {
        val t = TransportTracker("tcp", listOf(tcp(0, 1, 10_000, false), tcp(1, 0, 10_000, false)))
        t.observe(listOf(tcp(0, 1, 8_000, false), tcp(1, 0, 12_000, false)))
        val s = text(t.finish(listOf(tcp(0, 3, 14_000, false), tcp(1, 2, 14_000, false))))
        assertEquals(
            mapOf(
                "transport" to "tcp", "connections" to "2", "polls" to "2", "retransmitted" to "4",
                "congestion_events" to "0", "cwnd_bytes" to "28000", "cwnd_min_bytes" to "20000",
                "cwnd_mean_bytes" to "24000", "srtt_ns" to "30000000",
            ),
            s,
        )
        assertFalse("lost" in s, "TCP through Netty reports no lost packets")
        assertFalse("packets_sent" in s, "Netty's tcpInfo() has no tcpi_segs_out")
    }

    @Test
    fun tcpCongestionEventsAreEntriesIntoRecovery() {
        val t = TransportTracker("tcp", listOf(tcp(0, 0, 1, true)))
        // Already recovering at START: not an entry. Leaves, enters, stays, leaves, enters.
        for (r in listOf(true, false, true, true, false, true)) t.observe(listOf(tcp(0, 0, 1, r)))
        // A connection that appears during the window, recovering.
        t.observe(listOf(tcp(0, 0, 1, true), tcp(7, 0, 1, true)))
        val s = t.finish(listOf(tcp(0, 0, 1, false), tcp(7, 0, 1, false)))
        assertEquals("3", s["congestion_events"].toString())
    }

    @Test
    fun quicCountersComeFromTheLibraryAndHaveNoCongestionEvents() {
        fun q(sent: Long, lost: Long, cwnd: Long) = ConnReading(
            id = 0, packetsSent = sent, bytesSent = sent * 1200, retransmitted = lost, lost = lost,
            cwndBytes = cwnd, srttNs = 31_000_000, deliveryRateBps = 8_000_000,
        )
        val t = TransportTracker("quic", listOf(q(10, 0, 12_000)))
        t.observe(listOf(q(50, 1, 6_000)))
        val s = text(t.finish(listOf(q(110, 2, 30_000))))
        assertEquals("100", s["packets_sent"])
        assertEquals("120000", s["bytes_sent"])
        assertEquals("2", s["lost"])
        assertEquals("2", s["retransmitted"])
        assertEquals("6000", s["cwnd_min_bytes"])
        assertEquals("18000", s["cwnd_mean_bytes"])
        assertEquals("30000", s["cwnd_bytes"])
        assertEquals("8000000", s["delivery_rate_bps"])
        assertFalse("congestion_events" in s, "the QUIC codec has no congestion-event counter")
    }

    @Test
    fun aCounterOneConnectionLacksIsAbsentAndNewConnectionsCountFromZero() {
        val a = ConnReading(id = 0, packetsSent = 10, bytesSent = 100, cwndBytes = 1)
        val b = ConnReading(id = 1, packetsSent = 10, cwndBytes = 1)
        val s = TransportTracker("quic", emptyList()).finish(listOf(a, b))
        assertEquals("20", s["packets_sent"].toString())
        assertNull(s["bytes_sent"])
    }

    @Test
    fun noConnectionsStillSaysSo() {
        val s = text(TransportTracker("quic", emptyList()).finish(emptyList()))
        assertEquals(mapOf("transport" to "quic", "connections" to "0", "polls" to "1"), s)
    }

    @Test
    fun tcpReadingConvertsUnits() {
        val r = tcpReading(3, TCP_CA_LOSS, 10, 1448, 30_500, 7)
        assertEquals(ConnReading(id = 3, retransmitted = 7, inRecovery = true, cwndBytes = 14_480, srttNs = 30_500_000), r)
        assertEquals(false, tcpReading(0, 0, 1, 1, 1, 0).inRecovery)
        assertEquals(true, tcpReading(0, TCP_CA_RECOVERY, 1, 1, 1, 0).inRecovery)
    }

    @Test
    fun theObjectIsValidJsonWithStringCounters() {
        val s = TransportTracker("tcp", emptyList()).finish(listOf(tcp(0, 5, 100, false)))
        assertEquals(
            """{"transport":"tcp","connections":"1","polls":"1","retransmitted":"5","congestion_events":"0",""" +
                """"cwnd_bytes":"100","cwnd_min_bytes":"100","cwnd_mean_bytes":"100","srtt_ns":"30000000"}""",
            Json.encode(s),
        )
    }
}
