//! SHA-256 helpers shared by the cache key and the fingerprints.

use sha2::{Digest, Sha256};

const HEX: &[u8; 16] = b"0123456789abcdef";

/// Lowercase hex of a finished digest (what `hashlib`'s `hexdigest()` returns).
pub fn hex(hasher: Sha256) -> String {
    let digest = hasher.finalize();
    let mut out = String::with_capacity(64);
    for byte in digest {
        out.push(HEX[(byte >> 4) as usize] as char);
        out.push(HEX[(byte & 0xF) as usize] as char);
    }
    out
}

/// `hashlib.sha256(data).hexdigest()`.
pub fn sha256_hex(data: &[u8]) -> String {
    let mut hasher = Sha256::new();
    hasher.update(data);
    hex(hasher)
}

/// The cache-key framing: each part prefixed by its UTF-8 length (u64, big-endian).
pub fn framed_hex<'a>(parts: impl IntoIterator<Item = &'a [u8]>) -> String {
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update((part.len() as u64).to_be_bytes());
        hasher.update(part);
    }
    hex(hasher)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_cache_key_answers() {
        let empty: [&[u8]; 2] = [b"", b"1"];
        assert_eq!(
            framed_hex(empty),
            "ed022e0fea6855d99f5b119c65f603c46b06b0ef1ace06a5f790b7df9ab91a2d"
        );
        let message = "{\"b\":[1,2],\"content\":\"héllo\",\"role\":\"user\"}";
        let parts: [&[u8]; 3] = [b"run-1", b"3", message.as_bytes()];
        assert_eq!(
            framed_hex(parts),
            "7236a314a731a458ddc501fdbcaf9f4aa1e63c0d3e2052da6b0114aed54fcb35"
        );
    }

    #[test]
    fn sha256_of_nothing() {
        assert_eq!(
            sha256_hex(b""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }
}
