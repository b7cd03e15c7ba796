package rpcarena.peer

import kotlin.test.Test
import kotlin.test.assertEquals
import kotlin.test.assertFailsWith
import kotlin.test.assertFalse
import kotlin.test.assertTrue

// Revision 1.4's minimum for a peer without a JSON stack: `--client-mode official` (the default)
// accepted and changing nothing, `replay` and unknown modes refused, `--payload dated` refused on
// every stack, and `capabilities` saying 1.4 without `dated` or `client_modes`.
class ArgsRevision14Test {
    private val clientTls = listOf("--server-name", "127.0.0.1", "--ca", "ca.pem")

    private fun client(stack: String = "grpc", extra: List<String> = emptyList()) = listOf(
        "--stack", stack, "--server", "127.0.0.1:1", "--shape", "unary", "--concurrency", "2",
        "--request-size", "0", "--response-size", "0", "--messages-per-stream", "1",
        "--warmup-ms", "0", "--window-ms", "1", "--drain-ms", "1", "--load", "closed",
    ) + clientTls + extra

    private fun refusal(argv: List<String>): String = assertFailsWith<ArgError> { parseClient(argv) }.message!!

    @Test
    fun officialIsTheDefaultAndGivingItChangesNothing() {
        for (stack in STACKS) {
            assertEquals(parseClient(client(stack)), parseClient(client(stack, listOf("--client-mode", "official"))))
        }
        assertEquals("--client-mode is given twice", refusal(client(extra = listOf("--client-mode", "official", "--client-mode", "official"))))
    }

    @Test
    fun replayIsRefusedOnEveryStackSayingWhyAndWhatToGive() {
        for (stack in STACKS) {
            assertEquals(
                "--client-mode replay is not offered on --stack $stack: $REPLAY_REFUSED; leave --client-mode out or give official",
                refusal(client(stack, listOf("--client-mode", "replay"))),
            )
        }
    }

    @Test
    fun anUnknownModeIsRefusedNamingTheArgument() {
        assertEquals(
            "--client-mode \"puppet\": expected official or replay, and the kotlin peer takes official only; leave --client-mode out or give official",
            refusal(client(extra = listOf("--client-mode", "puppet"))),
        )
        val e = refusal(client(extra = listOf("--client-mode", "")))
        assertTrue(e.startsWith("--client-mode \"\": expected official or replay"), e)
    }

    @Test
    fun datedIsRefusedOnEveryStackWhateverTheSizes() {
        for (stack in STACKS) {
            val why = "--payload dated is not offered on --stack $stack: $DATED_REFUSED; use zeros or structured"
            assertEquals(why, refusal(client(stack, listOf("--payload", "dated"))))
            val sized = client(stack, listOf("--payload", "dated")).toMutableList()
            sized[sized.indexOf("--request-size") + 1] = "64"
            assertEquals(why, refusal(sized))
        }
        assertTrue(DATED_REFUSED.contains("JSON"), DATED_REFUSED)
        assertEquals("--payload \"json\": expected one of zeros, structured", refusal(client(extra = listOf("--payload", "json"))))
        assertEquals("zeros", parseClient(client()).payload)
        assertEquals("structured", parseClient(client(extra = listOf("--payload", "structured"))).payload)
    }

    @Test
    fun theServerTakesNeitherArgument() {
        val server = listOf("--stack", "grpc", "--listen", "127.0.0.1:0", "--tls", "off")
        for (flag in listOf("--payload", "--client-mode")) {
            val e = assertFailsWith<ArgError> { parseServer(server + listOf(flag, "dated")) }.message!!
            assertEquals("unknown argument \"$flag\" for the server role", e)
        }
    }

    @Test
    fun capabilitiesSayRevision14WithoutDatedOrClientModes() {
        assertEquals("1.4", Capabilities.fields()["revision"])
        for (stack in STACKS) {
            for (client in listOf(true, false)) {
                val entry = Capabilities.entry(stack, client)
                assertEquals(listOf("zeros", "structured"), entry["payloads"])
                assertFalse("client_modes" in entry, "$stack client=$client: absent means official only")
            }
        }
    }
}
