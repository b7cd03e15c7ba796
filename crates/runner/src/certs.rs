//! One private CA per campaign run (ECDSA P-256) and server certificates whose SAN is the
//! address the server listens on. Certificates are public and go to `certificates/` (a reader
//! can verify what the peers presented); the CA's and servers' private keys go to `private/`,
//! a directory of mode 0700 with keys of mode 0600, which the report says not to publish.

use crate::error::{Error, FileContext, Result};
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose, PKCS_ECDSA_P256_SHA256,
};
use std::fs;
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Paths of a server's certificate material.
#[derive(Debug, Clone)]
pub struct ServerIdentity {
    /// The name or IP address in the certificate's SAN (what clients verify against).
    pub name: String,
    /// PEM certificate chain (leaf, then CA).
    pub cert: PathBuf,
    /// PEM PKCS#8 private key (mode 0600).
    pub key: PathBuf,
}

/// The campaign's CA.
pub struct Authority {
    /// Where certificates go.
    public: PathBuf,
    /// Where private keys go (mode 0700).
    private: PathBuf,
    issuer: CertifiedIssuer<'static, KeyPair>,
    /// PEM certificate of the CA: the only trust anchor clients get.
    pub ca_cert: PathBuf,
}

impl Authority {
    /// Creates the CA: its certificate in `public`, its key in `private` (both created if
    /// needed; `private` with mode 0700 whatever the umask).
    pub fn create(public: &Path, private: &Path, campaign: &str) -> Result<Authority> {
        fs::create_dir_all(public).file("creating", public)?;
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(private)
            .file("creating", private)?;
        fs::set_permissions(private, fs::Permissions::from_mode(0o700))
            .file("making private (0700)", private)?;
        let key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256)
            .map_err(certificate("generating the CA's P-256 key"))?;
        let mut params = CertificateParams::new(Vec::<String>::new())
            .map_err(certificate("the CA's parameters"))?;
        params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
        params.distinguished_name.push(
            DnType::CommonName,
            format!("rpcarena CA for campaign {campaign}"),
        );
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        write_private(&private.join("ca.key"), &key.serialize_pem())?;
        let issuer = CertifiedIssuer::self_signed(params, key)
            .map_err(certificate("self-signing the CA"))?;
        let ca_cert = public.join("ca.pem");
        fs::write(&ca_cert, issuer.pem()).file("writing", &ca_cert)?;
        Ok(Authority {
            public: public.to_path_buf(),
            private: private.to_path_buf(),
            issuer,
            ca_cert,
        })
    }

    /// Issues (or reuses, if already issued in this run) a server certificate for `name`.
    pub fn server(&self, name: &str) -> Result<ServerIdentity> {
        let file_stem = format!("server-{}", name.replace([':', '/'], "_"));
        let cert = self.public.join(format!("{file_stem}.pem"));
        let key_path = self.private.join(format!("{file_stem}.key"));
        if cert.exists() && key_path.exists() {
            return Ok(ServerIdentity {
                name: name.to_string(),
                cert,
                key: key_path,
            });
        }
        let key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256)
            .map_err(certificate("generating a server P-256 key"))?;
        // rcgen turns a string that parses as an IP address into an IP SAN.
        let mut params = CertificateParams::new(vec![name.to_string()]).map_err(certificate(
            &format!("server name {name:?} is not a valid SAN"),
        ))?;
        params
            .distinguished_name
            .push(DnType::CommonName, format!("rpcarena server {name}"));
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        let leaf = params
            .signed_by(&key, &self.issuer)
            .map_err(certificate("signing the server certificate"))?;
        write_private(&key_path, &key.serialize_pem())?;
        fs::write(&cert, format!("{}{}", leaf.pem(), self.issuer.pem())).file("writing", &cert)?;
        Ok(ServerIdentity {
            name: name.to_string(),
            cert,
            key: key_path,
        })
    }
}

fn write_private(path: &Path, pem: &str) -> Result<()> {
    let mut file = fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .file("creating private key file", path)?;
    file.write_all(pem.as_bytes()).file("writing", path)
}

/// Names what rcgen failed to do, as [`Error::Certificate`].
fn certificate(what: &str) -> impl FnOnce(rcgen::Error) -> Error {
    let what = what.to_string();
    move |source| Error::Certificate { what, source }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_ca_and_server_with_private_keys_0600_apart_in_a_0700_directory() {
        let dir = tempfile::tempdir().unwrap();
        let (public, private) = (dir.path().join("certificates"), dir.path().join("private"));
        let ca = Authority::create(&public, &private, "t").unwrap();
        let server = ca.server("127.0.0.1").unwrap();
        for key in [private.join("ca.key"), server.key.clone()] {
            let mode = fs::metadata(&key).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600, "{}", key.display());
            assert!(key.starts_with(&private), "{}", key.display());
        }
        // Before the fix the keys sat in certificates/ (publishable) with the umask's mode.
        let mode = fs::metadata(&private).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700);
        let public_files: Vec<String> = fs::read_dir(&public)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(
            public_files.iter().all(|f| f.ends_with(".pem")),
            "{public_files:?}"
        );
        let chain = fs::read_to_string(&server.cert).unwrap();
        assert_eq!(chain.matches("BEGIN CERTIFICATE").count(), 2);
        assert!(
            fs::read_to_string(&ca.ca_cert)
                .unwrap()
                .contains("BEGIN CERTIFICATE")
        );
        // issuing again reuses the files
        let again = ca.server("127.0.0.1").unwrap();
        assert_eq!(fs::read_to_string(&again.cert).unwrap(), chain);
    }
}
