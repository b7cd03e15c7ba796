import assert from 'node:assert/strict';
import fs from 'node:fs';
import { test } from 'node:test';
import { CRYPTO_ERROR, certificates, looksLikeTls, verifyCertificate } from '../src/tls.js';

const fixture = (name) => fs.readFileSync(new URL(`./fixtures/${name}`, import.meta.url), 'utf8');
const der = (name) => certificates(fixture(name)).map((c) => c.raw);

test('the quic client verification accepts the chain for its IP and refuses the rest', () => {
  const chain = der('ip.pem');
  const ca = der('ca.pem');
  assert.equal(verifyCertificate(chain, ca, '127.0.0.1'), null);
  assert.equal(verifyCertificate(chain, ca, '127.0.0.2').code, CRYPTO_ERROR.BAD_CERTIFICATE);
  assert.equal(verifyCertificate(chain, der('other-ca.pem'), '127.0.0.1').code, CRYPTO_ERROR.UNKNOWN_CA);
  assert.equal(verifyCertificate(chain.slice(0, 1), ca, '127.0.0.1'), null);
  assert.equal(verifyCertificate(der('dns.pem'), ca, 'localhost'), null);
  assert.equal(verifyCertificate(der('dns.pem'), ca, '127.0.0.1').code, CRYPTO_ERROR.BAD_CERTIFICATE);
  const later = Date.now() + 200 * 365 * 24 * 3600 * 1000;
  assert.equal(verifyCertificate(chain, ca, '127.0.0.1', later).code, CRYPTO_ERROR.CERTIFICATE_EXPIRED);
});

test('TLS failures are told from connection failures by their text', () => {
  assert.ok(looksLikeTls('unable to verify the first certificate'));
  assert.ok(looksLikeTls("Hostname/IP does not match certificate's altnames: IP: 127.0.0.2 is not in the cert's list"));
  assert.ok(looksLikeTls({ code: 'ERR_SSL_TLSV1_ALERT_NO_APPLICATION_PROTOCOL', message: 'alert' }));
  assert.ok(!looksLikeTls('connect ECONNREFUSED 127.0.0.1:9'));
});
