package rpcarena.peer

import java.io.File
import java.net.InetAddress
import java.security.KeyStore
import java.security.cert.CertificateException
import java.security.cert.CertificateFactory
import java.security.cert.X509Certificate
import javax.net.ssl.TrustManagerFactory
import javax.net.ssl.X509TrustManager
import javax.net.ssl.X509ExtendedTrustManager
import javax.net.ssl.SSLEngine
import java.net.Socket

// The one TLS policy of both stacks (docs/stacks.md "TLS"): TLS 1.3 only, X25519 only, the
// client preferring AES-256-GCM, trust only --ca, verify --server-name (DNS or IP SAN) here,
// whatever the library does on top; no resumption.

const val TLS13 = "TLSv1.3"
val TLS_CIPHERS = listOf("TLS_AES_256_GCM_SHA384", "TLS_AES_128_GCM_SHA256", "TLS_CHACHA20_POLY1305_SHA256")
val TLS_CIPHERS_DECLARED = listOf("TLS13_AES_256_GCM_SHA384", "TLS13_AES_128_GCM_SHA256", "TLS13_CHACHA20_POLY1305_SHA256")

/** Reads a PEM file or fails with a config error naming it. */
fun readable(flag: String, path: String): File {
    val f = File(path)
    if (!f.canRead() || !f.isFile) throw ArgError("$flag $path: cannot read the file")
    return f
}

fun loadCa(path: String): List<X509Certificate> {
    val f = readable("--ca", path)
    val certs = try {
        f.inputStream().use { CertificateFactory.getInstance("X.509").generateCertificates(it) }
            .map { it as X509Certificate }
    } catch (e: Exception) {
        throw ArgError("--ca $path: not a PEM certificate (${e.message})")
    }
    if (certs.isEmpty()) throw ArgError("--ca $path: no certificate in the file")
    return certs
}

/** Trusts only the campaign's CA and checks the leaf against --server-name. */
class CampaignTrust(ca: List<X509Certificate>, private val serverName: String) : X509ExtendedTrustManager() {
    private val delegate: X509TrustManager

    init {
        val ks = KeyStore.getInstance(KeyStore.getDefaultType())
        ks.load(null, null)
        ca.forEachIndexed { i, c -> ks.setCertificateEntry("ca$i", c) }
        val tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm())
        tmf.init(ks)
        delegate = tmf.trustManagers.filterIsInstance<X509TrustManager>().first()
    }

    override fun checkClientTrusted(chain: Array<out X509Certificate>, authType: String) =
        throw CertificateException("client certificates are not used")

    /** The last verification failure, so a handshake error can name its reason. */
    @Volatile
    var failure: Exception? = null

    override fun checkServerTrusted(chain: Array<out X509Certificate>, authType: String) {
        try {
            delegate.checkServerTrusted(chain, authType)
        } catch (e: CertificateException) {
            failure = CertificateException("invalid peer certificate: UnknownIssuer (${e.message})")
            throw failure!!
        }
        if (!matchesName(chain[0], serverName)) {
            failure = CertificateException("invalid peer certificate: NotValidForName (--server-name $serverName)")
            throw failure!!
        }
    }

    // The name is checked here against --server-name, whatever endpoint identification the
    // library asks for: one rule for both stacks (IP SANs included).
    override fun checkServerTrusted(chain: Array<out X509Certificate>, authType: String, socket: Socket?) =
        checkServerTrusted(chain, authType)

    override fun checkServerTrusted(chain: Array<out X509Certificate>, authType: String, engine: SSLEngine?) =
        checkServerTrusted(chain, authType)

    override fun checkClientTrusted(chain: Array<out X509Certificate>, authType: String, socket: Socket?) =
        checkClientTrusted(chain, authType)

    override fun checkClientTrusted(chain: Array<out X509Certificate>, authType: String, engine: SSLEngine?) =
        checkClientTrusted(chain, authType)

    override fun getAcceptedIssuers(): Array<X509Certificate> = delegate.acceptedIssuers

    companion object {
        fun isIp(name: String) = name.contains(':') || Regex("^[0-9]+(\\.[0-9]+){3}$").matches(name)

        fun matchesName(leaf: X509Certificate, name: String): Boolean {
            val sans = leaf.subjectAlternativeNames ?: return false
            if (isIp(name)) {
                val want = try { InetAddress.getByName(name) } catch (e: Exception) { return false }
                return sans.any { it[0] == 7 && runCatching { InetAddress.getByName(it[1] as String) == want }.getOrDefault(false) }
            }
            val host = name.trimEnd('.').lowercase()
            return sans.any { san ->
                if (san[0] != 2) return@any false
                val pattern = (san[1] as String).trimEnd('.').lowercase()
                if (pattern.startsWith("*.")) {
                    val rest = pattern.substring(1)
                    host.endsWith(rest) && host.indexOf('.') == host.length - rest.length
                } else {
                    pattern == host
                }
            }
        }
    }
}

/** True when a throwable's cause chain says the TLS handshake or certificate failed. */
fun isTlsFailure(t: Throwable?): Boolean {
    var c = t
    var depth = 0
    while (c != null && depth < 20) {
        if (c is javax.net.ssl.SSLException || c is CertificateException) return true
        val n = c.javaClass.name
        if (n.contains("SSL") || n.contains("Handshake")) return true
        val m = c.message ?: ""
        if (m.contains("certificate", true) || m.contains("handshake", true) || m.contains("TLS", false)) return true
        c = c.cause
        depth++
    }
    return false
}

fun causeText(t: Throwable): String {
    val parts = ArrayList<String>()
    var c: Throwable? = t
    var depth = 0
    while (c != null && depth < 6) {
        val m = c.message ?: c.javaClass.simpleName
        if (parts.none { it == m }) parts.add(m)
        c = c.cause
        depth++
    }
    return parts.joinToString(": ").replace('\n', ' ')
}
