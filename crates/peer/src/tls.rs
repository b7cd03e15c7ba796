//! Every rustls configuration of the peer, built in one place so that all stacks are identical.
//!
//! Fairness rules (docs/stacks.md, "TLS"): the *ring* crypto provider; TLS 1.3 only; key exchange
//! X25519 only (so no stack pays for a different or a post-quantum hybrid group); rustls's default
//! TLS 1.3 cipher suites; no session resumption and no 0-RTT, so every connection performs the
//! same full handshake. Only the ALPN protocol differs: `h2` for gRPC, `rpcarena/1` for the
//! native framing on QUIC and TCP.

use crate::args::Stack;
use rpcarena_protocol::event::Setting;
use rustls::client::Resumption;
use rustls::crypto::CryptoProvider;
use rustls::server::NoServerSessionStorage;
use rustls::{ClientConfig, RootCertStore, ServerConfig, SupportedCipherSuite};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The TLS versions every configuration allows: TLS 1.3 only.
pub const VERSIONS: &[&rustls::SupportedProtocolVersion] = &[&rustls::version::TLS13];

/// ALPN protocol of the gRPC stack (HTTP/2).
pub const ALPN_H2: &[u8] = b"h2";
/// ALPN protocol of the native framing (quic and tcp stacks).
pub const ALPN_NATIVE: &[u8] = b"rpcarena/1";

/// The ALPN protocol a stack negotiates.
pub fn alpn(stack: Stack) -> &'static [u8] {
    match stack {
        Stack::Grpc => ALPN_H2,
        Stack::Quic | Stack::Tcp => ALPN_NATIVE,
        // never used: zmq runs without TLS
        Stack::Zmq => b"",
    }
}

/// The one crypto provider: *ring*, X25519 only, the default TLS 1.3 cipher suites.
pub fn provider() -> Arc<CryptoProvider> {
    let mut provider = rustls::crypto::ring::default_provider();
    provider.kx_groups = vec![rustls::crypto::ring::kx_group::X25519];
    provider
        .cipher_suites
        .retain(|suite| matches!(suite, SupportedCipherSuite::Tls13(_)));
    Arc::new(provider)
}

/// Why a TLS configuration cannot be built from the files it was given.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// `--cert` or `--ca` (`flag`) yields no usable PEM certificate.
    #[error("{flag} {}", .path.display())]
    Certificates {
        /// `--cert` or `--ca`.
        flag: &'static str,
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        source: PemError,
    },
    /// `--key` holds no PEM private key.
    #[error(
        "--key {}: cannot read a PEM private key: {error}; pass the server's PKCS#8 key",
        .path.display()
    )]
    Key {
        /// The file.
        path: PathBuf,
        /// What rustls-pki-types said.
        error: rustls_pki_types::pem::Error,
    },
    /// The crypto provider refuses TLS 1.3 (not with *ring*; checked all the same).
    #[error("the TLS provider does not support TLS 1.3")]
    NoTls13(#[source] rustls::Error),
    /// `--cert` and `--key` do not belong together, or the certificate is unusable.
    #[error("--cert and --key do not form a usable certificate and key")]
    CertifiedKey(#[source] rustls::Error),
    /// A certificate of `--ca` cannot be a trust anchor.
    #[error("--ca {}: not a usable CA certificate", .path.display())]
    CaCertificate {
        /// The file.
        path: PathBuf,
        /// What rustls said.
        source: rustls::Error,
    },
}

/// Why a PEM file yields no certificate.
#[derive(Debug, thiserror::Error)]
pub enum PemError {
    /// The file cannot be read.
    #[error("cannot read PEM certificates: {0}")]
    Read(rustls_pki_types::pem::Error),
    /// A certificate in it cannot be parsed.
    #[error("cannot parse PEM certificates: {0}")]
    Parse(rustls_pki_types::pem::Error),
    /// It holds none.
    #[error("no PEM certificate found (expected -----BEGIN CERTIFICATE-----)")]
    Empty,
}

/// The server configuration: `cert` is a PEM chain (leaf first), `key` a PEM private key.
pub fn server_config(cert: &Path, key: &Path, alpn: &[u8]) -> Result<ServerConfig, TlsError> {
    let chain = load_certificates(cert).map_err(|source| TlsError::Certificates {
        flag: "--cert",
        path: cert.to_path_buf(),
        source,
    })?;
    let key = PrivateKeyDer::from_pem_file(key).map_err(|error| TlsError::Key {
        path: key.to_path_buf(),
        error,
    })?;
    let mut config = ServerConfig::builder_with_provider(provider())
        .with_protocol_versions(VERSIONS)
        .map_err(TlsError::NoTls13)?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(TlsError::CertifiedKey)?;
    config.alpn_protocols = vec![alpn.to_vec()];
    // No resumption: no session cache, no tickets. No 0-RTT (QUIC accepts only 0 or u32::MAX).
    config.session_storage = Arc::new(NoServerSessionStorage {});
    config.send_tls13_tickets = 0;
    config.max_early_data_size = 0;
    Ok(config)
}

/// The client configuration: trusts only the CA in `ca`.
pub fn client_config(ca: &Path, alpn: &[u8]) -> Result<ClientConfig, TlsError> {
    let mut roots = RootCertStore::empty();
    let certificates = load_certificates(ca).map_err(|source| TlsError::Certificates {
        flag: "--ca",
        path: ca.to_path_buf(),
        source,
    })?;
    for certificate in certificates {
        roots
            .add(certificate)
            .map_err(|source| TlsError::CaCertificate {
                path: ca.to_path_buf(),
                source,
            })?;
    }
    let mut config = ClientConfig::builder_with_provider(provider())
        .with_protocol_versions(VERSIONS)
        .map_err(TlsError::NoTls13)?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![alpn.to_vec()];
    config.resumption = Resumption::disabled();
    config.enable_early_data = false;
    Ok(config)
}

/// The TLS settings every stack declares in `capabilities` (docs/stacks.md, "Settings every peer
/// declares"), read from the versions and the provider the configurations above are built from:
/// `tls_versions`, `tls_groups`, `tls_ciphers` (preference order) and `tls_resumption` (off: no
/// session cache, no tickets, resumption disabled in the client; a test checks the configs).
pub fn declared() -> Vec<(&'static str, Setting)> {
    let provider = provider();
    let versions = VERSIONS
        .iter()
        .map(|v| match v.version {
            rustls::ProtocolVersion::TLSv1_2 => "1.2".to_string(),
            rustls::ProtocolVersion::TLSv1_3 => "1.3".to_string(),
            other => format!("{other:?}"),
        })
        .collect::<Vec<_>>();
    let groups = provider
        .kx_groups
        .iter()
        .map(|g| format!("{:?}", g.name()).to_lowercase())
        .collect::<Vec<_>>();
    let ciphers = provider
        .cipher_suites
        .iter()
        .map(|s| format!("{:?}", s.suite()))
        .collect::<Vec<_>>();
    vec![
        ("tls_versions", versions.into()),
        ("tls_groups", groups.into()),
        ("tls_ciphers", ciphers.into()),
        ("tls_resumption", false.into()),
    ]
}

fn load_certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, PemError> {
    let certificates = CertificateDer::pem_file_iter(path)
        .map_err(PemError::Read)?
        .collect::<Result<Vec<_>, _>>()
        .map_err(PemError::Parse)?;
    if certificates.is_empty() {
        return Err(PemError::Empty);
    }
    Ok(certificates)
}

/// The message for a failed TLS handshake over TCP (tokio-rustls reports rustls errors inside an
/// `io::Error`). It always says that it is a TLS error and what to check.
pub fn handshake_error_message(error: &io::Error, server: &str, server_name: &str) -> String {
    let cause = match error
        .get_ref()
        .and_then(|e| e.downcast_ref::<rustls::Error>())
    {
        Some(tls) => tls.to_string(),
        None => format!("connection failed during the handshake: {error}"),
    };
    handshake_message(&cause, server, server_name)
}

/// The message for a failed TLS handshake whose cause is already text (QUIC).
pub fn handshake_message(cause: &str, server: &str, server_name: &str) -> String {
    format!(
        "TLS handshake with {server} failed (TLS certificate/handshake error): {cause}; check that \
         --ca is the CA that signed the server certificate and that --server-name {server_name} \
         matches its subject alternative name"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::failure::chain;

    #[test]
    fn the_provider_offers_only_x25519_and_tls13_suites() {
        let provider = provider();
        assert_eq!(provider.kx_groups.len(), 1);
        assert_eq!(provider.kx_groups[0].name(), rustls::NamedGroup::X25519);
        assert_eq!(provider.cipher_suites.len(), 3);
        assert!(
            provider
                .cipher_suites
                .iter()
                .all(|s| s.version() == &rustls::version::TLS13)
        );
    }

    /// Writes a CA and a server certificate for 127.0.0.1 (signed by it) into `dir`.
    fn write_pki(dir: &Path) {
        let ca_key = rcgen::KeyPair::generate().unwrap();
        let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        let ca_cert = ca.self_signed(&ca_key).unwrap();
        let issuer = rcgen::Issuer::from_params(&ca, &ca_key);
        let key = rcgen::KeyPair::generate().unwrap();
        let leaf = rcgen::CertificateParams::new(vec!["127.0.0.1".to_string()])
            .unwrap()
            .signed_by(&key, &issuer)
            .unwrap();
        std::fs::write(dir.join("ca.pem"), ca_cert.pem()).unwrap();
        std::fs::write(dir.join("server.pem"), leaf.pem()).unwrap();
        std::fs::write(dir.join("server.key"), key.serialize_pem()).unwrap();
    }

    /// Runs a handshake in memory between the two configs.
    fn handshake(
        client: ClientConfig,
        server: ServerConfig,
    ) -> (rustls::ClientConnection, rustls::ServerConnection) {
        let name = rustls_pki_types::ServerName::try_from("127.0.0.1").unwrap();
        let mut client = rustls::ClientConnection::new(Arc::new(client), name).unwrap();
        let mut server = rustls::ServerConnection::new(Arc::new(server)).unwrap();
        for _ in 0..10 {
            let mut wire = Vec::new();
            while client.wants_write() {
                client.write_tls(&mut wire).unwrap();
            }
            server.read_tls(&mut wire.as_slice()).unwrap();
            server.process_new_packets().unwrap();
            let mut wire = Vec::new();
            while server.wants_write() {
                server.write_tls(&mut wire).unwrap();
            }
            client.read_tls(&mut wire.as_slice()).unwrap();
            client.process_new_packets().unwrap();
            if !client.is_handshaking() && !server.is_handshaking() && !server.wants_write() {
                break;
            }
        }
        assert!(!client.is_handshaking() && !server.is_handshaking());
        (client, server)
    }

    #[test]
    fn every_handshake_negotiates_the_same_parameters_without_resumption() {
        let dir = tempfile::tempdir().unwrap();
        write_pki(dir.path());
        for alpn in [ALPN_H2, ALPN_NATIVE] {
            let client = client_config(&dir.path().join("ca.pem"), alpn).unwrap();
            let server = server_config(
                &dir.path().join("server.pem"),
                &dir.path().join("server.key"),
                alpn,
            )
            .unwrap();
            let (client, server) = handshake(client, server);
            for (suite, group, negotiated_alpn) in [
                (
                    client.negotiated_cipher_suite(),
                    client.negotiated_key_exchange_group(),
                    client.alpn_protocol(),
                ),
                (
                    server.negotiated_cipher_suite(),
                    server.negotiated_key_exchange_group(),
                    server.alpn_protocol(),
                ),
            ] {
                assert_eq!(
                    suite.map(|s| s.suite()),
                    Some(rustls::CipherSuite::TLS13_AES_256_GCM_SHA384)
                );
                assert_eq!(group.map(|g| g.name()), Some(rustls::NamedGroup::X25519));
                assert_eq!(negotiated_alpn, Some(alpn));
            }
            assert_eq!(
                client.protocol_version(),
                Some(rustls::ProtocolVersion::TLSv1_3)
            );
            // no tickets were issued, so nothing could be resumed
            assert_eq!(client.tls13_tickets_received(), 0);
        }
    }

    #[test]
    fn the_declared_settings_are_what_the_configs_do() {
        let declared: std::collections::BTreeMap<_, _> = declared().into_iter().collect();
        let strings = |list: &[&str]| Setting::List(list.iter().map(|s| s.to_string()).collect());
        assert_eq!(declared["tls_versions"], strings(&["1.3"]));
        assert_eq!(declared["tls_groups"], strings(&["x25519"]));
        assert_eq!(
            declared["tls_ciphers"],
            strings(&[
                "TLS13_AES_256_GCM_SHA384",
                "TLS13_AES_128_GCM_SHA256",
                "TLS13_CHACHA20_POLY1305_SHA256"
            ])
        );
        // resumption: off in the server config (no tickets, a cache that stores nothing)
        let dir = tempfile::tempdir().unwrap();
        write_pki(dir.path());
        let server = server_config(
            &dir.path().join("server.pem"),
            &dir.path().join("server.key"),
            ALPN_H2,
        )
        .unwrap();
        let resumes = server.send_tls13_tickets > 0 || server.session_storage.can_cache();
        assert_eq!(declared["tls_resumption"], Setting::Flag(resumes));
    }

    #[test]
    fn unreadable_and_unparsable_files_name_the_argument() {
        let dir = tempfile::tempdir().unwrap();
        let garbage = dir.path().join("garbage.pem");
        std::fs::write(&garbage, "not a certificate").unwrap();
        let err = client_config(&garbage, ALPN_NATIVE).unwrap_err();
        assert!(
            matches!(
                err,
                TlsError::Certificates {
                    flag: "--ca",
                    source: PemError::Empty,
                    ..
                }
            ),
            "{err:?}"
        );
        assert!(chain(&err).starts_with("--ca "), "{}", chain(&err));
        write_pki(dir.path());
        let err = server_config(&dir.path().join("server.pem"), &garbage, ALPN_H2).unwrap_err();
        assert!(matches!(err, TlsError::Key { .. }), "{err:?}");
        assert!(chain(&err).starts_with("--key "), "{}", chain(&err));
    }

    #[test]
    fn unreadable_files_name_the_argument() {
        let missing = Path::new("/nonexistent/rpcarena.pem");
        let err = client_config(missing, ALPN_NATIVE).unwrap_err();
        assert!(
            chain(&err)
                .starts_with("--ca /nonexistent/rpcarena.pem: cannot read PEM certificates: "),
            "{}",
            chain(&err)
        );
        let err = server_config(missing, missing, ALPN_H2).unwrap_err();
        assert!(
            matches!(
                err,
                TlsError::Certificates {
                    flag: "--cert",
                    source: PemError::Read(_),
                    ..
                }
            ),
            "{err:?}"
        );
    }

    #[test]
    fn handshake_messages_say_tls() {
        let error = io::Error::new(
            io::ErrorKind::InvalidData,
            rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer),
        );
        let message = handshake_error_message(&error, "127.0.0.1:1", "127.0.0.1");
        assert!(
            message.contains("TLS certificate/handshake error"),
            "{message}"
        );
        assert!(message.contains("UnknownIssuer"), "{message}");
    }
}
