package protocol

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"maps"
	"strings"
)

// An endpoint option whose value is a credential the provider presents (Meta's verify_token,
// sent in the subscription GET) is stored as a salted SHA-256 digest, never as given: the
// database, GetEndpoint, ListEndpoints and the audit trail only ever see the digest, and a
// digest sent back unchanged (an update that resends the options it read) is kept as it is.
//
// The digest is fast on purpose: checking it is part of answering an unauthenticated request,
// so a slow hash would let anyone who can reach an edge spend the server's CPU. A token a
// person chose can therefore be guessed from a leaked digest by trying candidates; unlike the
// signing secrets, it is not sealed under the master key. A verify token guards only Meta's
// subscription handshake, not deliveries, which the app secret signs.
const (
	credentialDigestPrefix = "sha256-salted:"
	credentialDigestLabel  = "hookverify credential option v1\x00"
	credentialSaltSize     = 16
)

var credentialEncoding = base64.RawURLEncoding

// DigestCredentialOptions returns options with the value of each of p's CredentialOptions
// replaced by its digest, leaving values that already are one. options is not modified.
func (p *Protocol) DigestCredentialOptions(options map[string]string) map[string]string {
	var out map[string]string
	for _, name := range p.CredentialOptions {
		v, ok := options[name]
		if !ok || isCredentialDigest(v) {
			continue
		}
		if out == nil {
			out = maps.Clone(options)
		}
		out[name] = digestCredential(v)
	}
	if out == nil {
		return options
	}
	return out
}

// digestCredential returns the storable digest of a credential under a fresh random salt.
func digestCredential(credential string) string {
	salt := make([]byte, credentialSaltSize)
	rand.Read(salt) // never fails (crypto/rand, Go 1.24+)
	return credentialDigestPrefix + credentialEncoding.EncodeToString(salt) + ":" +
		credentialEncoding.EncodeToString(credentialSum(salt, credential))
}

func credentialSum(salt []byte, credential string) []byte {
	h := sha256.New()
	h.Write([]byte(credentialDigestLabel))
	h.Write(salt)
	h.Write([]byte(credential))
	return h.Sum(nil)
}

// parseCredentialDigest splits a stored digest into its salt and sum; ok is false for any
// value that is not exactly one.
func parseCredentialDigest(stored string) (salt, sum []byte, ok bool) {
	rest, found := strings.CutPrefix(stored, credentialDigestPrefix)
	if !found {
		return nil, nil, false
	}
	saltText, sumText, found := strings.Cut(rest, ":")
	if !found {
		return nil, nil, false
	}
	salt, err := credentialEncoding.DecodeString(saltText)
	if err != nil || len(salt) != credentialSaltSize {
		return nil, nil, false
	}
	sum, err = credentialEncoding.DecodeString(sumText)
	if err != nil || len(sum) != sha256.Size {
		return nil, nil, false
	}
	return salt, sum, true
}

func isCredentialDigest(v string) bool {
	_, _, ok := parseCredentialDigest(v)
	return ok
}

// looksLikeCredentialDigest is true for a value that starts like a digest, so that a
// damaged one is refused rather than taken for the credential itself.
func looksLikeCredentialDigest(v string) bool {
	return strings.HasPrefix(v, credentialDigestPrefix)
}

// credentialMatches says, in constant time over the digests, whether presented is the
// credential stored. A stored value that is not a digest is compared as it is: options
// written before credentials were digested, until the server's start-up upgrade rewrites
// them (server.DigestStoredCredentialOptions).
func credentialMatches(stored, presented string) bool {
	salt, sum, ok := parseCredentialDigest(stored)
	if !ok {
		return subtle.ConstantTimeCompare([]byte(presented), []byte(stored)) == 1
	}
	return subtle.ConstantTimeCompare(credentialSum(salt, presented), sum) == 1
}
