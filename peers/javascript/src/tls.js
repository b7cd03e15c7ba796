// TLS for every stack (docs/stacks.md "TLS"), in one place so a setting cannot drift between
// stacks: TLS 1.3 only, X25519 only, the TLS 1.3 suites in rustls's order (AES-256-GCM first,
// so it is negotiated), no session tickets from the server and no resumption by the client, the
// client trusting only --ca and checking --server-name (a DNS name or an IP address SAN).
//
// grpc and tcp use node:tls (OpenSSL). quic uses BoringSSL inside quiche, configured through
// @matrixai/quic; its name check handles DNS names only, so for an IP address --server-name the
// quic client verifies the chain and the IP SAN itself with node:crypto (verifyCertificate).
import crypto from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import tls from 'node:tls';
import { Failure, code, phase } from './protocol.js';

export const TLS_CIPHERS = 'TLS_AES_256_GCM_SHA384:TLS_AES_128_GCM_SHA256:TLS_CHACHA20_POLY1305_SHA256';
export const TLS_GROUPS = 'X25519';

/** Options shared by every node:tls context of this peer. */
export const NODE_TLS = Object.freeze({
  minVersion: 'TLSv1.3',
  maxVersion: 'TLSv1.3',
  ciphers: TLS_CIPHERS,
  ecdhCurve: TLS_GROUPS,
});

/** Reads a PEM file given by `flag`; a missing, unreadable or unparsable file is a config error. */
export function readPem(flag, file, kind) {
  let text;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (e) {
    throw new Failure(phase.STARTUP, code.CONFIG, `${flag} ${file}: cannot read: ${e.message}`);
  }
  try {
    if (kind === 'key') crypto.createPrivateKey(text);
    else if (certificates(text).length === 0) throw new Error('no PEM certificate in the file');
  } catch (e) {
    throw new Failure(phase.STARTUP, code.CONFIG, `${flag} ${file}: not a PEM ${kind === 'key' ? 'private key' : 'certificate'}: ${e.message}`);
  }
  return text;
}

/** The certificates of a PEM text, parsed. */
export function certificates(pem) {
  const blocks = pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
  return blocks.map((block) => new crypto.X509Certificate(block));
}

/** Server side of node:tls (grpc, tcp). */
export function serverContextOptions(certPem, keyPem) {
  return {
    ...NODE_TLS,
    cert: certPem,
    key: keyPem,
    // No session tickets (and Node keeps no server session cache), so no resumption.
    secureOptions: crypto.constants.SSL_OP_NO_TICKET,
  };
}

/**
 * Client side of node:tls: a secure context that trusts only the CA, and the check of the
 * server's certificate against --server-name (Node's own checkServerIdentity: DNS or IP SAN).
 * Node resumes a session only when given one, which this peer never does.
 */
export function clientContext(caPem) {
  return tls.createSecureContext({ ...NODE_TLS, ca: caPem });
}

export function checkServerName(serverName) {
  return (_host, cert) => tls.checkServerIdentity(serverName, cert);
}

/** SNI: a DNS name only (RFC 6066 forbids IP addresses in server_name). */
export function sniOf(serverName) {
  return net.isIP(serverName) ? undefined : serverName;
}

const TLS_PATTERNS = [
  /certificate/i,
  /self[- ]signed/i,
  /unable to (get|verify)/i,
  /altnames|Hostname\/IP does not match/i,
  /\bSSL\b|\bTLS\b|tlsv1|alert/i,
  /handshake/i,
  /ALPN|application protocol/i,
  /ERR_SSL|ERR_TLS|UNABLE_TO|CERT_|DEPTH_ZERO/,
];

/**
 * Whether an error (or its text) says the TLS handshake or certificate check failed, rather
 * than the connection. Node and grpc-js often give only text; this is the best evidence.
 */
export function looksLikeTls(errorOrText) {
  const text = typeof errorOrText === 'string' ? errorOrText : `${errorOrText?.code ?? ''} ${errorOrText?.message ?? ''}`;
  if (/ECONNREFUSED|ECONNRESET|EHOSTUNREACH|ENETUNREACH|ETIMEDOUT|EADDRNOTAVAIL/.test(text) && !/alert/.test(text)) {
    return false;
  }
  return TLS_PATTERNS.some((p) => p.test(text));
}

/** The `error` message of a failed handshake, naming the server, the name and the reason. */
export function handshakeMessage(server, serverName, reason) {
  return `TLS handshake with ${server} failed (TLS certificate/handshake error): ${reason}; check that --ca is the CA that signed the server certificate and that --server-name ${serverName} is in its SAN`;
}

// ---------------------------------------------------------------------------------------------
// Certificate verification for the quic client with an IP address --server-name

/** BoringSSL alert-based codes @matrixai/quic expects from a verification callback. */
export const CRYPTO_ERROR = Object.freeze({ BAD_CERTIFICATE: 298, CERTIFICATE_EXPIRED: 301, UNKNOWN_CA: 304 });

function withinValidity(cert, now) {
  return new Date(cert.validFrom).getTime() <= now && now <= new Date(cert.validTo).getTime();
}

/**
 * Verifies a presented chain (DER, leaf first) against the trusted CA certificates (DER) and
 * `serverName`: a path from the leaf through presented CA certificates to a trusted one, every
 * signature checked with the issuer's key, every certificate within its validity, the leaf
 * valid for serverAuth and its SAN matching the name (node:crypto's checkIP / checkHost).
 * Returns null or {code, reason}.
 */
export function verifyCertificate(chainDer, trustedDer, serverName, now = Date.now()) {
  if (!chainDer || chainDer.length === 0) return { code: CRYPTO_ERROR.BAD_CERTIFICATE, reason: 'the server sent no certificate' };
  let chain;
  let trusted;
  try {
    chain = chainDer.map((der) => new crypto.X509Certificate(Buffer.from(der)));
    trusted = trustedDer.map((der) => new crypto.X509Certificate(Buffer.from(der)));
  } catch (e) {
    return { code: CRYPTO_ERROR.BAD_CERTIFICATE, reason: `unparsable certificate: ${e.message}` };
  }
  const leaf = chain[0];
  const nameOk = net.isIP(serverName) ? leaf.checkIP(serverName) : leaf.checkHost(serverName, { subject: 'never' });
  if (!nameOk) {
    return { code: CRYPTO_ERROR.BAD_CERTIFICATE, reason: `the certificate is not valid for ${serverName} (SAN: ${leaf.subjectAltName ?? 'none'})` };
  }
  if (leaf.keyUsage && leaf.keyUsage.length > 0 && !leaf.keyUsage.includes('1.3.6.1.5.5.7.3.1')) {
    return { code: CRYPTO_ERROR.BAD_CERTIFICATE, reason: 'the certificate is not valid for server authentication' };
  }
  let current = leaf;
  const used = new Set();
  for (let depth = 0; depth <= chain.length; depth++) {
    if (!withinValidity(current, now)) {
      return { code: CRYPTO_ERROR.CERTIFICATE_EXPIRED, reason: `certificate ${current.subject} is outside its validity` };
    }
    const anchor = trusted.find((ca) => ca.ca && current.checkIssued(ca) && current.verify(ca.publicKey));
    if (anchor) {
      return withinValidity(anchor, now) ? null : { code: CRYPTO_ERROR.CERTIFICATE_EXPIRED, reason: 'the CA certificate is outside its validity' };
    }
    const next = chain.findIndex((c, i) => i > 0 && !used.has(i) && c.ca && current.checkIssued(c) && current.verify(c.publicKey));
    if (next < 0) break;
    used.add(next);
    current = chain[next];
  }
  return { code: CRYPTO_ERROR.UNKNOWN_CA, reason: 'the certificate is not signed by the --ca certificate (unknown issuer)' };
}

/** The reason of a BoringSSL verification failure seen as a local crypto error code. */
export function cryptoErrorReason(errorCode) {
  switch (errorCode) {
    case CRYPTO_ERROR.UNKNOWN_CA:
      return 'unknown issuer: the certificate is not signed by the --ca certificate';
    case CRYPTO_ERROR.BAD_CERTIFICATE:
      return 'bad certificate (for example, not valid for --server-name)';
    case CRYPTO_ERROR.CERTIFICATE_EXPIRED:
      return 'certificate expired';
    case 376:
      return 'no application protocol (ALPN) in common';
    case 326:
      return 'no TLS version in common';
    default:
      return `TLS alert ${errorCode - 256}`;
  }
}
