//! Root certificates read from PEM text: the CAs `tally serve` checks its
//! clients against, and the roots `tally history` checks a PostgreSQL
//! server against. One reader, so that both refuse the same input, each
//! in its own words.

use rustls::RootCertStore;
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;

/// Why PEM text gave no root certificates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RootsError {
    /// A block that is not a PEM certificate (the parser's words).
    NotPem(String),
    /// A certificate rustls cannot use as a root (its words).
    Unusable(String),
    /// No certificate at all.
    Empty,
}

/// Every certificate of `pem`, as roots.
pub fn root_store(pem: &[u8]) -> Result<RootCertStore, RootsError> {
    let mut store = RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(pem) {
        let cert = cert.map_err(|e| RootsError::NotPem(e.to_string()))?;
        store
            .add(cert)
            .map_err(|e| RootsError::Unusable(e.to_string()))?;
    }
    if store.is_empty() {
        return Err(RootsError::Empty);
    }
    Ok(store)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_without_a_certificate_gives_no_roots() {
        assert_eq!(root_store(b"").err(), Some(RootsError::Empty));
        assert_eq!(
            root_store(b"just some words\n").err(),
            Some(RootsError::Empty)
        );
        let broken = b"-----BEGIN CERTIFICATE-----\n!!!!\n-----END CERTIFICATE-----\n";
        assert!(matches!(root_store(broken), Err(RootsError::NotPem(_))));
    }
}
