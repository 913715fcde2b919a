//! TLS for a measurement link: the receiver makes a self-signed certificate when it starts and
//! prints its SHA-256 fingerprint; the sender pins that fingerprint (given on the command line
//! or read from the certificate file the receiver wrote) instead of trusting any authority.
//! The handshake's signatures are still checked against the pinned certificate's key, so a
//! peer without the private key cannot pass.

use crate::QuicError;
use quinn::crypto::rustls::{QuicClientConfig, QuicServerConfig};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};
use sha2::{Digest, Sha256};
use std::sync::Arc;

/// The application protocol both ends name (QUIC requires one, RFC 9001 §8.1).
pub const ALPN: &[u8] = b"pathweave-transfer/1";
/// The name in the certificate and in the sender's handshake.
pub const SERVER_NAME: &str = "pathweave";

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// A certificate made for one receiver run, with its key.
pub struct Identity {
    /// The certificate, DER.
    pub cert: CertificateDer<'static>,
    pem: String,
    key: PrivatePkcs8KeyDer<'static>,
}

impl Identity {
    /// A new self-signed certificate for [`SERVER_NAME`].
    pub fn generate() -> Result<Identity, QuicError> {
        let made = rcgen::generate_simple_self_signed(vec![SERVER_NAME.to_string()])
            .map_err(|e| QuicError::Tls(format!("making a certificate: {e}")))?;
        Ok(Identity {
            cert: made.cert.der().clone(),
            pem: made.cert.pem(),
            key: PrivatePkcs8KeyDer::from(made.signing_key.serialize_der()),
        })
    }

    /// The certificate's fingerprint: SHA-256 of its DER, in hex.
    pub fn fingerprint(&self) -> String {
        fingerprint(&self.cert)
    }

    /// The certificate in PEM, for `--cert-out`.
    pub fn pem(&self) -> &str {
        &self.pem
    }

    /// quinn's server configuration presenting this certificate.
    pub fn server_crypto(&self) -> Result<Arc<QuicServerConfig>, QuicError> {
        let mut tls = rustls::ServerConfig::builder_with_provider(provider())
            .with_protocol_versions(&[&rustls::version::TLS13])
            .map_err(|e| QuicError::Tls(e.to_string()))?
            .with_no_client_auth()
            .with_single_cert(
                vec![self.cert.clone()],
                PrivateKeyDer::Pkcs8(self.key.clone_key()),
            )
            .map_err(|e| QuicError::Tls(e.to_string()))?;
        tls.alpn_protocols = vec![ALPN.to_vec()];
        let q = QuicServerConfig::try_from(tls).map_err(|e| QuicError::Tls(e.to_string()))?;
        Ok(Arc::new(q))
    }
}

/// SHA-256 of a certificate's DER, in lower-case hex.
pub fn fingerprint(cert: &[u8]) -> String {
    hex(&Sha256::digest(cert))
}

/// Lower-case hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A fingerprint as written by a user: hex digits, optionally in colon-separated pairs, any
/// case. Returns the 64 lower-case digits.
pub fn parse_fingerprint(text: &str) -> Result<String, QuicError> {
    let digits: String = text
        .trim()
        .chars()
        .filter(|c| *c != ':')
        .map(|c| c.to_ascii_lowercase())
        .collect();
    if digits.len() != 64 || !digits.chars().all(|c| c.is_ascii_hexdigit()) {
        return Err(QuicError::Usage(format!(
            "--fingerprint {text:?}: expected the receiver's SHA-256 fingerprint, 64 hex digits \
             (colons allowed), as `pathweave quic serve` prints it"
        )));
    }
    Ok(digits)
}

/// The fingerprint of the first certificate in a PEM file (as `quic serve --cert-out` writes
/// it) or of a DER file.
pub fn fingerprint_of_file(path: &std::path::Path) -> Result<String, QuicError> {
    let bytes = std::fs::read(path)
        .map_err(|e| QuicError::Usage(format!("--cert {}: {e}", path.display())))?;
    if bytes.starts_with(b"-----BEGIN") || bytes.windows(11).any(|w| w == b"-----BEGIN ") {
        let cert = CertificateDer::from_pem_slice(&bytes).map_err(|e| {
            QuicError::Usage(format!(
                "--cert {}: no PEM certificate could be read ({e})",
                path.display()
            ))
        })?;
        return Ok(fingerprint(&cert));
    }
    if bytes.first() != Some(&0x30) {
        return Err(QuicError::Usage(format!(
            "--cert {}: not a certificate (expected PEM as `quic serve --cert-out` writes it, \
             or DER)",
            path.display()
        )));
    }
    Ok(fingerprint(&bytes))
}

/// Accepts exactly the certificate with the pinned fingerprint.
#[derive(Debug)]
struct Pinned {
    fingerprint: String,
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for Pinned {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let seen = fingerprint(end_entity);
        if seen == self.fingerprint {
            Ok(ServerCertVerified::assertion())
        } else {
            Err(rustls::Error::General(format!(
                "the receiver's certificate has fingerprint {seen}, not the pinned {}",
                self.fingerprint
            )))
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

/// quinn's client crypto, trusting only the certificate with `fingerprint` (64 hex digits).
pub fn client_crypto(fingerprint: &str) -> Result<Arc<QuicClientConfig>, QuicError> {
    let provider = provider();
    let mut tls = rustls::ClientConfig::builder_with_provider(Arc::clone(&provider))
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| QuicError::Tls(e.to_string()))?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(Pinned {
            fingerprint: fingerprint.to_string(),
            provider,
        }))
        .with_no_client_auth();
    tls.alpn_protocols = vec![ALPN.to_vec()];
    let q = QuicClientConfig::try_from(tls).map_err(|e| QuicError::Tls(e.to_string()))?;
    Ok(Arc::new(q))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha256_of_abc_is_the_fips_180_vector() {
        assert_eq!(
            fingerprint(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn fingerprints_parse_with_colons_and_refuse_garbage() {
        let f = "BA:78:16:bf:8f:01:cf:ea:41:41:40:de:5d:ae:22:23:b0:03:61:a3:96:17:7a:9c:b4:10:ff:61:f2:00:15:ad";
        assert_eq!(parse_fingerprint(f).unwrap(), fingerprint(b"abc"));
        assert!(parse_fingerprint("abc").is_err());
        assert!(parse_fingerprint(&"z".repeat(64)).is_err());
    }

    #[test]
    fn a_written_certificate_reads_back_with_the_same_fingerprint() {
        let id = Identity::generate().unwrap();
        let dir = std::env::temp_dir().join(format!("pw-cert-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("c.pem");
        std::fs::write(&path, id.pem()).unwrap();
        assert_eq!(fingerprint_of_file(&path).unwrap(), id.fingerprint());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
