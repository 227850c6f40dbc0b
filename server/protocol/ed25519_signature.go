package protocol

import "crypto/ed25519"

// Ed25519 signatures verified against the configured public keys (Discord, Telnyx).

// matchEd25519Key returns the id of the first key (a 32-byte Ed25519 public key) under which
// sig is a valid signature of msg. Keys of another length are skipped. Go's ed25519.Verify
// refuses non-canonical signatures, so one message has one accepted signature per key.
func matchEd25519Key(keys []Key, sig, msg []byte) (string, bool) {
	for _, k := range keys {
		if len(k.Material) != ed25519.PublicKeySize {
			continue
		}
		if ed25519.Verify(ed25519.PublicKey(k.Material), msg, sig) {
			return k.ID, true
		}
	}
	return "", false
}

// rejectNoEd25519Match is the rejection when no key verified the signature.
func rejectNoEd25519Match(header string, keys []Key) error {
	for _, k := range keys {
		if len(k.Material) == ed25519.PublicKeySize {
			return Reject(ReasonSignatureMismatch, "the %s signature does not verify under any public key", header)
		}
	}
	return Reject(ReasonSignatureMismatch, "no public key is configured, so the %s signature cannot verify", header)
}
