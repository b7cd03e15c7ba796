package rpcarena.peer

// rpcarena-peer-kotlin: `capabilities`, `server ...` or `client ...` (docs/peer-protocol.md).

fun main(args: Array<String>) {
    Events // points System.out at stderr before any library prints
    val role = args.firstOrNull()
    val rest = args.drop(1)
    try {
        when (role) {
            "capabilities" -> {
                if (rest.isNotEmpty()) throw ArgError("capabilities takes no arguments, got \"${rest[0]}\"")
                Events.emit("capabilities", Capabilities.fields())
                Exit.now(0)
            }
            "server" -> {
                val cfg = parseServer(rest)
                if (cfg.stack !in STACKS) throw ArgError("--stack ${cfg.stack}: the kotlin peer offers ${STACKS.joinToString(" and ")}")
                cfg.cert?.let { readable("--cert", it) }
                cfg.key?.let { readable("--key", it) }
                ServerRole.run(cfg)
            }
            "client" -> {
                val cfg = parseClient(rest)
                if (cfg.stack !in STACKS) throw ArgError("--stack ${cfg.stack}: the kotlin peer offers ${STACKS.joinToString(" and ")}")
                cfg.ca?.let { loadCa(it) }
                ClientRole.run(cfg)
            }
            else -> throw ArgError("expected capabilities, server or client as the first argument, got ${role?.let { "\"$it\"" } ?: "nothing"}")
        }
    } catch (e: ArgError) {
        Exit.error("startup", "config", e.message ?: "bad arguments")
    } catch (e: Throwable) {
        Exit.error("startup", "internal", causeText(e))
    }
}
