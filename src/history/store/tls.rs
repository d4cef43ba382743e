//! TLS for PostgreSQL as its own clients do it (libpq's `sslmode`), over
//! rustls with the ring provider the rest of tally uses:
//!
//! | sslmode | TLS | the server's certificate |
//! |---|---|---|
//! | `disable` | never | — |
//! | `allow`, `prefer` (default) | if the server offers it | checked against the root certificates when there are any (`sslrootcert`, or `~/.postgresql/root.crt` if it exists), else not |
//! | `require` | always | as `prefer` |
//! | `verify-ca` | always | signed by a root certificate |
//! | `verify-full` | always | signed by a root certificate, and for the host named |
//!
//! `sslrootcert=system` takes the system's certificates
//! (`/etc/ssl/certs/ca-certificates.crt`). (`allow` tries TLS first here,
//! as `prefer` does; libpq tries without first.) Channel binding
//! (`tls-server-end-point`, SCRAM-SHA-256-PLUS) is offered from the server
//! certificate's hash.

use std::future::Future;
use std::io;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use postgres::tls::{ChannelBinding, MakeTlsConnect, TlsConnect};
use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, ring};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// libpq's `sslmode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SslMode {
    Disable,
    Allow,
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

impl SslMode {
    pub fn parse(s: &str) -> Option<SslMode> {
        Some(match s {
            "disable" => SslMode::Disable,
            "allow" => SslMode::Allow,
            "prefer" => SslMode::Prefer,
            "require" => SslMode::Require,
            "verify-ca" => SslMode::VerifyCa,
            "verify-full" => SslMode::VerifyFull,
            _ => return None,
        })
    }

    /// What tokio-postgres is told: whether TLS is tried, and required.
    pub fn negotiation(self) -> postgres::config::SslMode {
        use postgres::config::SslMode as T;
        match self {
            SslMode::Disable => T::Disable,
            SslMode::Allow | SslMode::Prefer => T::Prefer,
            SslMode::Require | SslMode::VerifyCa | SslMode::VerifyFull => T::Require,
        }
    }
}

/// The root certificates a mode checks the server against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Roots {
    /// A PEM file.
    File(PathBuf),
    /// The system's bundle.
    System,
    /// None given, and no `~/.postgresql/root.crt`.
    None,
}

/// The system's certificate bundle (Debian's ca-certificates).
const SYSTEM_ROOTS: &str = "/etc/ssl/certs/ca-certificates.crt";

/// The bound on a root-certificate file.
const ROOTS: crate::input::Bound = crate::input::Bound {
    what: "root certificate file",
    cap_bytes: 16 << 20,
    fix: "give sslrootcert a PEM file of root certificates",
};

/// Makes the TLS connector for `mode` with `roots`.
pub fn connector(mode: SslMode, roots: &Roots) -> Result<MakeRustls, String> {
    let provider = Arc::new(ring::default_provider());
    let store = match roots {
        Roots::None => None,
        Roots::System => Some(load_roots(Path::new(SYSTEM_ROOTS))?),
        Roots::File(p) => Some(load_roots(p)?),
    };
    let verifier: Arc<dyn ServerCertVerifier> = match (mode, store) {
        (SslMode::VerifyCa | SslMode::VerifyFull, None) => {
            return Err(
                "sslmode verify-ca and verify-full need root certificates: give sslrootcert=FILE \
                 (or system), or put them in ~/.postgresql/root.crt"
                    .into(),
            );
        }
        (_, None) => Arc::new(AnyCertificate(Arc::clone(&provider))),
        (mode, Some(store)) => {
            let webpki =
                WebPkiServerVerifier::builder_with_provider(Arc::new(store), Arc::clone(&provider))
                    .build()
                    .map_err(|e| format!("the root certificates cannot be used: {e}"))?;
            if mode == SslMode::VerifyFull {
                webpki
            } else {
                Arc::new(AnyName(webpki))
            }
        }
    };
    let config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    Ok(MakeRustls(Arc::new(config)))
}

fn load_roots(path: &Path) -> Result<RootCertStore, String> {
    let pem = crate::input::read_file(path, &ROOTS).map_err(|e| e.to_string())?;
    let shown = crate::text::path::display(path);
    crate::pem::root_store(&pem).map_err(|e| match e {
        crate::pem::RootsError::NotPem(e) | crate::pem::RootsError::Unusable(e) => {
            format!("{shown}: {e}")
        }
        crate::pem::RootsError::Empty => format!("{shown} holds no PEM certificate"),
    })
}

/// `require` and `prefer` without root certificates: any certificate, but
/// the handshake's signatures are still checked (as libpq does).
#[derive(Debug)]
struct AnyCertificate(Arc<CryptoProvider>);

impl ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// `verify-ca`: the chain is checked, the host name is not.
#[derive(Debug)]
struct AnyName(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for AnyName {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp, now)
        {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

/// The connector tokio-postgres asks for a TLS connection to a host.
#[derive(Clone)]
pub struct MakeRustls(Arc<ClientConfig>);

impl<S> MakeTlsConnect<S> for MakeRustls
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    type Stream = RustlsStream<S>;
    type TlsConnect = RustlsConnect;
    type Error = io::Error;

    fn make_tls_connect(&mut self, domain: &str) -> io::Result<RustlsConnect> {
        let name = ServerName::try_from(domain.to_string())
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        Ok(RustlsConnect {
            name,
            connector: tokio_rustls::TlsConnector::from(Arc::clone(&self.0)),
        })
    }
}

pub struct RustlsConnect {
    name: ServerName<'static>,
    connector: tokio_rustls::TlsConnector,
}

impl<S> TlsConnect<S> for RustlsConnect
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    type Stream = RustlsStream<S>;
    type Error = io::Error;
    type Future = Pin<Box<dyn Future<Output = io::Result<RustlsStream<S>>> + Send>>;

    fn connect(self, stream: S) -> Self::Future {
        Box::pin(async move {
            let tls = self.connector.connect(self.name, stream).await?;
            Ok(RustlsStream(tls))
        })
    }
}

/// A TLS connection to the server.
pub struct RustlsStream<S>(tokio_rustls::client::TlsStream<S>);

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncRead for RustlsStream<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_read(cx, buf)
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncWrite for RustlsStream<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_shutdown(cx)
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> postgres::tls::TlsStream for RustlsStream<S> {
    fn channel_binding(&self) -> ChannelBinding {
        let (_, session) = self.0.get_ref();
        session
            .peer_certificates()
            .and_then(|c| c.first())
            .and_then(|cert| end_point_hash(cert.as_ref()))
            .map_or_else(ChannelBinding::none, ChannelBinding::tls_server_end_point)
    }
}

/// RFC 5929's `tls-server-end-point`: the certificate hashed with its
/// signature's hash (SHA-256 for MD5 and SHA-1); `None` for signatures
/// without one hash (Ed25519, RSA-PSS).
fn end_point_hash(der: &[u8]) -> Option<Vec<u8>> {
    let (_, cert) = x509_parser::parse_x509_certificate(der).ok()?;
    let oid = cert.signature_algorithm.algorithm.to_id_string();
    let alg = match oid.as_str() {
        // md5, sha1, sha256 with RSA; ecdsa-with-SHA256
        "1.2.840.113549.1.1.4"
        | "1.2.840.113549.1.1.5"
        | "1.2.840.113549.1.1.11"
        | "1.2.840.10045.4.3.2" => &::ring::digest::SHA256,
        "1.2.840.113549.1.1.12" | "1.2.840.10045.4.3.3" => &::ring::digest::SHA384,
        "1.2.840.113549.1.1.13" | "1.2.840.10045.4.3.4" => &::ring::digest::SHA512,
        _ => return None,
    };
    Some(::ring::digest::digest(alg, der).as_ref().to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_read_as_libpq_spells_them() {
        assert_eq!(SslMode::parse("verify-full"), Some(SslMode::VerifyFull));
        assert_eq!(SslMode::parse("VERIFY-FULL"), None);
        assert!(matches!(
            SslMode::Allow.negotiation(),
            postgres::config::SslMode::Prefer
        ));
    }

    #[test]
    fn verifying_without_roots_is_refused_with_the_fix() {
        let e = connector(SslMode::VerifyFull, &Roots::None).err().unwrap();
        assert!(e.contains("give sslrootcert=FILE"), "{e}");
        assert!(connector(SslMode::Require, &Roots::None).is_ok());
    }

    #[test]
    fn the_end_point_hash_follows_the_signature() {
        let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
        let cert = rcgen::CertificateParams::new(vec!["db".into()])
            .unwrap()
            .self_signed(&key)
            .unwrap();
        let hash = end_point_hash(cert.der()).unwrap();
        assert_eq!(hash.len(), 32);
        let ed = rcgen::KeyPair::generate_for(&rcgen::PKCS_ED25519).unwrap();
        let cert = rcgen::CertificateParams::new(vec!["db".into()])
            .unwrap()
            .self_signed(&ed)
            .unwrap();
        assert_eq!(end_point_hash(cert.der()), None);
    }
}
