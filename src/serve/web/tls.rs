//! `tls_server_config`: the rustls server configuration (ring's
//! cryptography) built from the web config, with the exporters' meaning
//! of every key.
//!
//! Differences from a Go exporter, each said at start where a file asks
//! for it: rustls speaks TLS 1.2 and 1.3 only (a `min_version` of TLS10 or
//! TLS11 serves 1.2 and up), offers only AEAD cipher suites with forward
//! secrecy (CBC and RSA key-exchange suites in `cipher_suites` are left
//! out) and, with ring, no P-521 (`CurvePreferences: CurveP521` is left
//! out). As in Go, `cipher_suites` chooses among the TLS 1.2 suites; TLS
//! 1.3's are always offered.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::client::danger::HandshakeSignatureValid;
use rustls::crypto::{CryptoProvider, WebPkiSupportedAlgorithms, ring};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, UnixTime};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::server::{NoClientAuth, WebPkiClientVerifier};
use rustls::{
    CipherSuite, DigitallySignedStruct, DistinguishedName, ServerConfig, SignatureScheme,
    SupportedCipherSuite, SupportedProtocolVersion,
};
use serde::Deserialize;
use serde_saphyr::Spanned;

use super::Mistake;
use crate::text::path::display;

/// A TLS server configuration, ready for connections.
#[derive(Debug, Clone)]
pub struct Tls {
    pub config: Arc<ServerConfig>,
    /// Every client proves itself with a certificate verified against
    /// `client_ca_file` (`RequireAndVerifyClientCert`).
    pub verifies_clients: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct TlsFile {
    cert: Option<Spanned<String>>,
    key: Option<Spanned<String>>,
    client_ca: Option<Spanned<String>>,
    cert_file: Option<Spanned<String>>,
    key_file: Option<Spanned<String>>,
    client_auth_type: Option<Spanned<String>>,
    client_ca_file: Option<Spanned<String>>,
    cipher_suites: Option<Vec<Spanned<String>>>,
    curve_preferences: Option<Vec<Spanned<String>>>,
    min_version: Option<Spanned<String>>,
    max_version: Option<Spanned<String>>,
    prefer_server_cipher_suites: Option<bool>,
    client_allowed_sans: Option<Vec<Spanned<String>>>,
}

impl TlsFile {
    /// Whether any key asks for TLS (as the exporters decide it).
    fn enabled(&self) -> bool {
        [
            &self.cert,
            &self.key,
            &self.client_ca,
            &self.cert_file,
            &self.key_file,
            &self.client_auth_type,
            &self.client_ca_file,
        ]
        .iter()
        .any(|v| v.as_ref().is_some_and(|s| !s.value.is_empty()))
    }
}

/// The TLS 1.2 suites rustls offers, by the names Go gives them.
const TLS12_SUITES: [(&str, CipherSuite); 6] = [
    (
        "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
        CipherSuite::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
    ),
    (
        "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
        CipherSuite::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
    ),
    (
        "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
        CipherSuite::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
    ),
    (
        "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
        CipherSuite::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
    ),
    (
        "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
        CipherSuite::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
    ),
    (
        "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
        CipherSuite::TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
    ),
];

/// Names Go knows that rustls does not offer (left out, with a note),
/// and TLS 1.3's (always offered, as in Go).
const GO_ONLY_SUITES: [&str; 16] = [
    "TLS_RSA_WITH_RC4_128_SHA",
    "TLS_RSA_WITH_3DES_EDE_CBC_SHA",
    "TLS_RSA_WITH_AES_128_CBC_SHA",
    "TLS_RSA_WITH_AES_256_CBC_SHA",
    "TLS_RSA_WITH_AES_128_CBC_SHA256",
    "TLS_RSA_WITH_AES_128_GCM_SHA256",
    "TLS_RSA_WITH_AES_256_GCM_SHA384",
    "TLS_ECDHE_ECDSA_WITH_RC4_128_SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA",
    "TLS_ECDHE_RSA_WITH_RC4_128_SHA",
    "TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA",
    "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256",
];
const TLS13_SUITES: [&str; 3] = [
    "TLS_AES_128_GCM_SHA256",
    "TLS_AES_256_GCM_SHA384",
    "TLS_CHACHA20_POLY1305_SHA256",
];

/// `client_auth_type`, as Go's `tls.ClientAuthType`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ClientAuth {
    None,
    Request,
    RequireAny,
    VerifyIfGiven,
    RequireAndVerify,
}

/// The versions, in order.
fn version(name: &str) -> Option<u8> {
    match name {
        "TLS10" => Some(0),
        "TLS11" => Some(1),
        "TLS12" => Some(2),
        "TLS13" => Some(3),
        _ => None,
    }
}

/// Reads `inline` or the file `path` (relative to `dir`): the bytes and
/// what to call them in an error.
fn pem_source(
    inline: &Option<Spanned<String>>,
    path: &Option<Spanned<String>>,
    inline_key: &str,
    file_key: &str,
    dir: &Path,
) -> Result<Option<(Vec<u8>, u64, String)>, Mistake> {
    let path = path.as_ref().filter(|p| !p.value.is_empty());
    let inline = inline.as_ref().filter(|p| !p.value.is_empty());
    match (inline, path) {
        (Some(i), Some(_)) => Err((
            i.referenced.line(),
            format!("give one of {inline_key} and {file_key}, not both"),
        )),
        (Some(i), None) => Ok(Some((
            i.value.clone().into_bytes(),
            i.referenced.line(),
            inline_key.to_string(),
        ))),
        (None, Some(p)) => {
            let full: PathBuf = dir.join(&p.value);
            let what = format!("{file_key} {}", display(&full));
            let bytes = crate::input::read_file(&full, &super::PEM_FILE)
                .map_err(|e| (p.referenced.line(), format!("{file_key}: {e}")))?;
            Ok(Some((bytes, p.referenced.line(), what)))
        }
        (None, None) => Ok(None),
    }
}

/// The TLS configuration the file asks for; `None` when it asks for none.
pub(super) fn build(
    section: &Spanned<TlsFile>,
    dir: &Path,
    notes: &mut Vec<String>,
) -> Result<Option<Tls>, Mistake> {
    let t = &section.value;
    if !t.enabled() {
        return Ok(None);
    }
    let at = section.referenced.line();
    let identity = Identity::read(t, dir, at)?;
    let versions = versions(t, at, notes)?;
    let mut provider: CryptoProvider = ring::default_provider();
    choose_suites(&mut provider, t, &versions, at, notes)?;
    choose_curves(&mut provider, t, at, notes)?;
    let provider = Arc::new(provider);
    let (auth, verifier) = client_verifier(t, dir, at, &provider)?;
    let Identity {
        chain,
        key,
        key_line,
        cert_what,
        key_what,
    } = identity;
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&versions)
        .map_err(|e| (at, format!("tls_server_config: {e}")))?
        .with_client_cert_verifier(verifier)
        .with_single_cert(chain, key)
        .map_err(|e| match e {
            rustls::Error::InconsistentKeys(_) => (
                key_line,
                format!(
                    "{key_what} is not the key of the certificate in {cert_what}; give the key the certificate was made for"
                ),
            ),
            other => (key_line, format!("{key_what}: {other}")),
        })?;
    config.ignore_client_order = t.prefer_server_cipher_suites.unwrap_or(true);
    // HTTP/1.1 only: a scraper offering h2 and http/1.1 gets http/1.1.
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Some(Tls {
        config: Arc::new(config),
        verifies_clients: auth == ClientAuth::RequireAndVerify,
    }))
}

/// The server's certificate chain and private key, and where they came
/// from (their line, and what to call them in an error).
struct Identity {
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
    key_line: u64,
    cert_what: String,
    key_what: String,
}

impl Identity {
    /// Reads `cert`/`cert_file` and `key`/`key_file`; `at` is the
    /// section's line.
    fn read(t: &TlsFile, dir: &Path, at: u64) -> Result<Identity, Mistake> {
        let (cert_pem, cert_line, cert_what) = required(
            pem_source(&t.cert, &t.cert_file, "cert", "cert_file", dir)?,
            "cert_file (or cert): give the server's PEM certificate",
            at,
        )?;
        let (key_pem, key_line, key_what) = required(
            pem_source(&t.key, &t.key_file, "key", "key_file", dir)?,
            "key_file (or key): give the certificate's PEM private key",
            at,
        )?;
        let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&cert_pem)
            .collect::<Result<_, _>>()
            .map_err(|e| {
                (
                    cert_line,
                    format!("{cert_what}: not a PEM certificate: {e}"),
                )
            })?;
        if chain.is_empty() {
            return Err((
                cert_line,
                format!(
                    "{cert_what}: no certificate in it; give a PEM file with a CERTIFICATE block"
                ),
            ));
        }
        let key = PrivateKeyDer::from_pem_slice(&key_pem).map_err(|e| {
            (
                key_line,
                format!(
                    "{key_what}: no PEM private key in it ({e}); give the key of the certificate"
                ),
            )
        })?;
        Ok(Identity {
            chain,
            key,
            key_line,
            cert_what,
            key_what,
        })
    }
}

/// A PEM source the section must have: what is missing and how to give
/// it, at the section's line `at`, when it has none.
fn required(
    source: Option<(Vec<u8>, u64, String)>,
    missing: &str,
    at: u64,
) -> Result<(Vec<u8>, u64, String), Mistake> {
    source.ok_or_else(|| (at, format!("tls_server_config: missing {missing}")))
}

/// The line of an optional key, or the section's.
fn line_of(s: &Option<Spanned<String>>, at: u64) -> u64 {
    s.as_ref().map_or(at, |s| s.referenced.line())
}

/// The protocol versions of `min_version` to `max_version` that rustls
/// speaks (1.2 and 1.3).
fn versions(
    t: &TlsFile,
    at: u64,
    notes: &mut Vec<String>,
) -> Result<Vec<&'static SupportedProtocolVersion>, Mistake> {
    let named = |s: &Option<Spanned<String>>, default: u8| -> Result<u8, Mistake> {
        match s {
            None => Ok(default),
            Some(s) => version(&s.value).ok_or_else(|| {
                (
                    s.referenced.line(),
                    format!(
                        "unknown TLS version {:?}; use TLS10, TLS11, TLS12 or TLS13",
                        s.value
                    ),
                )
            }),
        }
    };
    let min = named(&t.min_version, 2)?;
    let max = named(&t.max_version, 3)?;
    if max < 2 {
        return Err((
            line_of(&t.max_version, at),
            "max_version: tally speaks TLS 1.2 and 1.3 only; use TLS12 or TLS13".to_string(),
        ));
    }
    if min > max {
        return Err((
            line_of(&t.min_version, at),
            "min_version is above max_version".to_string(),
        ));
    }
    if min < 2 {
        notes.push(
            "tls_server_config.min_version: tally speaks TLS 1.2 and 1.3 only; older clients cannot connect"
                .to_string(),
        );
    }
    Ok([
        (2u8, &rustls::version::TLS12),
        (3u8, &rustls::version::TLS13),
    ]
    .into_iter()
    .filter(|(v, _)| (min.max(2)..=max).contains(v))
    .map(|(_, p)| p)
    .collect())
}

/// `cipher_suites`: the TLS 1.2 suites offered, in the file's order (the
/// server's preference), then TLS 1.3's.
fn choose_suites(
    provider: &mut CryptoProvider,
    t: &TlsFile,
    versions: &[&'static SupportedProtocolVersion],
    at: u64,
    notes: &mut Vec<String>,
) -> Result<(), Mistake> {
    let Some(names) = t.cipher_suites.as_ref().filter(|n| !n.is_empty()) else {
        return Ok(());
    };
    let mut wanted: Vec<CipherSuite> = Vec::new();
    for n in names {
        if let Some((_, s)) = TLS12_SUITES.iter().find(|(g, _)| *g == n.value) {
            wanted.push(*s);
        } else if GO_ONLY_SUITES.contains(&n.value.as_str()) {
            notes.push(format!(
                "tls_server_config.cipher_suites: {} is left out: rustls offers only AEAD suites with forward secrecy",
                n.value
            ));
        } else if !TLS13_SUITES.contains(&n.value.as_str()) {
            let known: Vec<&str> = TLS12_SUITES.iter().map(|(g, _)| *g).collect();
            return Err((
                n.referenced.line(),
                format!(
                    "unknown cipher suite {:?}; tally offers {}",
                    n.value,
                    known.join(", ")
                ),
            ));
        }
    }
    if wanted.is_empty() && versions.contains(&&rustls::version::TLS12) {
        return Err((
            names.first().map_or(at, |n| n.referenced.line()),
            "cipher_suites leaves no TLS 1.2 suite tally offers; name one of the TLS_ECDHE_*_GCM_* or *_CHACHA20_POLY1305_SHA256 suites, or set min_version: TLS13"
                .to_string(),
        ));
    }
    // The file's order is the server's preference.
    let all = provider.cipher_suites.clone();
    let mut chosen: Vec<SupportedCipherSuite> = wanted
        .iter()
        .filter_map(|w| all.iter().find(|s| s.suite() == *w).copied())
        .collect();
    chosen.extend(all.iter().filter(|s| s.tls13().is_some()).copied());
    provider.cipher_suites = chosen;
    Ok(())
}

/// `curve_preferences`: the key-exchange groups offered, in order.
fn choose_curves(
    provider: &mut CryptoProvider,
    t: &TlsFile,
    at: u64,
    notes: &mut Vec<String>,
) -> Result<(), Mistake> {
    let Some(names) = t.curve_preferences.as_ref().filter(|n| !n.is_empty()) else {
        return Ok(());
    };
    let mut groups = Vec::new();
    for n in names {
        match n.value.as_str() {
            "X25519" => groups.push(ring::kx_group::X25519),
            "CurveP256" => groups.push(ring::kx_group::SECP256R1),
            "CurveP384" => groups.push(ring::kx_group::SECP384R1),
            "CurveP521" => notes.push(
                "tls_server_config.curve_preferences: CurveP521 is left out: ring has no P-521"
                    .to_string(),
            ),
            other => {
                return Err((
                    n.referenced.line(),
                    format!(
                        "unknown curve {other:?}; use X25519, CurveP256, CurveP384 or CurveP521"
                    ),
                ));
            }
        }
    }
    if groups.is_empty() {
        return Err((
            names.first().map_or(at, |n| n.referenced.line()),
            "curve_preferences leaves no curve tally offers; add X25519, CurveP256 or CurveP384"
                .to_string(),
        ));
    }
    provider.kx_groups = groups;
    Ok(())
}

/// `client_auth_type`, `client_ca`/`client_ca_file` and
/// `client_allowed_sans`: how client certificates are asked for and
/// checked.
fn client_verifier(
    t: &TlsFile,
    dir: &Path,
    at: u64,
    provider: &Arc<CryptoProvider>,
) -> Result<(ClientAuth, Arc<dyn ClientCertVerifier>), Mistake> {
    let auth = match t.client_auth_type.as_ref().map(|s| s.value.as_str()) {
        None | Some("" | "NoClientCert") => ClientAuth::None,
        Some("RequestClientCert") => ClientAuth::Request,
        Some("RequireAnyClientCert" | "RequireClientCert") => ClientAuth::RequireAny,
        Some("VerifyClientCertIfGiven") => ClientAuth::VerifyIfGiven,
        Some("RequireAndVerifyClientCert") => ClientAuth::RequireAndVerify,
        Some(other) => {
            return Err((
                line_of(&t.client_auth_type, at),
                format!(
                    "unknown client_auth_type {other:?}; use NoClientCert, RequestClientCert, \
                     RequireAnyClientCert, VerifyClientCertIfGiven or RequireAndVerifyClientCert"
                ),
            ));
        }
    };
    let ca = pem_source(
        &t.client_ca,
        &t.client_ca_file,
        "client_ca",
        "client_ca_file",
        dir,
    )?;
    if ca.is_some() && auth == ClientAuth::None {
        return Err((
            line_of(&t.client_ca_file, at).min(line_of(&t.client_ca, at)),
            "a client CA is given without client_auth_type; set client_auth_type: RequireAndVerifyClientCert"
                .to_string(),
        ));
    }
    let algorithms = provider.signature_verification_algorithms;
    let verifier: Arc<dyn ClientCertVerifier> = match auth {
        ClientAuth::None => Arc::new(NoClientAuth),
        ClientAuth::Request | ClientAuth::RequireAny => Arc::new(AnyClientCert {
            mandatory: auth == ClientAuth::RequireAny,
            algorithms,
        }),
        ClientAuth::VerifyIfGiven | ClientAuth::RequireAndVerify => {
            let Some((pem, line, what)) = ca else {
                return Err((
                    line_of(&t.client_auth_type, at),
                    "client_auth_type verifies client certificates: give client_ca_file, the PEM CA that signs them"
                        .to_string(),
                ));
            };
            verified_clients(&pem, line, &what, auth, provider)?
        }
    };
    let verifier = match &t.client_allowed_sans {
        Some(sans) if !sans.is_empty() => {
            if !matches!(auth, ClientAuth::RequireAny | ClientAuth::RequireAndVerify) {
                return Err((
                    sans.first().map_or(at, |s| s.referenced.line()),
                    "client_allowed_sans needs client_auth_type RequireAnyClientCert or RequireAndVerifyClientCert"
                        .to_string(),
                ));
            }
            Arc::new(AllowedSans {
                inner: verifier,
                sans: sans.iter().map(|s| s.value.clone()).collect(),
            })
        }
        _ => verifier,
    };
    Ok((auth, verifier))
}

/// A verifier of client certificates against the CAs of `pem` (read from
/// `what`, at `line`).
fn verified_clients(
    pem: &[u8],
    line: u64,
    what: &str,
    auth: ClientAuth,
    provider: &Arc<CryptoProvider>,
) -> Result<Arc<dyn ClientCertVerifier>, Mistake> {
    let roots = crate::pem::root_store(pem).map_err(|e| {
        (
            line,
            match e {
                crate::pem::RootsError::NotPem(e) => format!("{what}: not a PEM certificate: {e}"),
                crate::pem::RootsError::Unusable(e) => {
                    format!("{what}: not a CA certificate rustls can use: {e}")
                }
                crate::pem::RootsError::Empty => format!("{what}: no certificate in it"),
            },
        )
    })?;
    let mut b = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), Arc::clone(provider));
    if auth == ClientAuth::VerifyIfGiven {
        b = b.allow_unauthenticated();
    }
    b.build().map_err(|e| (line, format!("{what}: {e}")))
}

/// `RequestClientCert` and `RequireAnyClientCert`: a certificate is asked
/// for (and with the latter required) but not checked against a CA; the
/// client must still prove it holds the certificate's key.
#[derive(Debug)]
struct AnyClientCert {
    mandatory: bool,
    algorithms: WebPkiSupportedAlgorithms,
}

impl ClientCertVerifier for AnyClientCert {
    fn client_auth_mandatory(&self) -> bool {
        self.mandatory
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        &[]
    }

    fn verify_client_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        Ok(ClientCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

/// `client_allowed_sans`: the client certificate must name one of these
/// (a DNS name, e-mail address, IP address or URI, compared exactly).
#[derive(Debug)]
struct AllowedSans {
    inner: Arc<dyn ClientCertVerifier>,
    sans: Vec<String>,
}

/// The subject alternative names of a DER certificate, as strings.
pub fn subject_alt_names(der: &[u8]) -> Vec<String> {
    use x509_parser::extensions::GeneralName;
    let Ok((_, cert)) = x509_parser::parse_x509_certificate(der) else {
        return Vec::new();
    };
    let Ok(Some(ext)) = cert.subject_alternative_name() else {
        return Vec::new();
    };
    ext.value
        .general_names
        .iter()
        .filter_map(|n| match n {
            GeneralName::DNSName(s) | GeneralName::RFC822Name(s) | GeneralName::URI(s) => {
                Some((*s).to_string())
            }
            GeneralName::IPAddress(b) => match b.len() {
                4 => <[u8; 4]>::try_from(*b)
                    .ok()
                    .map(|a| std::net::Ipv4Addr::from(a).to_string()),
                16 => <[u8; 16]>::try_from(*b)
                    .ok()
                    .map(|a| std::net::Ipv6Addr::from(a).to_string()),
                _ => None,
            },
            _ => None,
        })
        .collect()
}

impl ClientCertVerifier for AllowedSans {
    fn offer_client_auth(&self) -> bool {
        self.inner.offer_client_auth()
    }

    fn client_auth_mandatory(&self) -> bool {
        self.inner.client_auth_mandatory()
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        self.inner.root_hint_subjects()
    }

    fn verify_client_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        let verified = self
            .inner
            .verify_client_cert(end_entity, intermediates, now)?;
        if subject_alt_names(end_entity)
            .iter()
            .any(|n| self.sans.contains(n))
        {
            Ok(verified)
        } else {
            Err(rustls::Error::General(
                "the client certificate names none of client_allowed_sans".to_string(),
            ))
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}
