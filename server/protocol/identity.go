package protocol

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// Where providers take the event identity from: a header, a field of the JSON body, or, when
// the provider sends no event id, the body's hash.

// bodyHashPrefix marks an identity derived from the raw body, for deliveries whose provider
// sends no stable event id: a retry carries the same bytes and so the same identity, while two
// distinct events with byte-identical bodies would be taken for one (which is why a provider id
// is always preferred where one exists).
const bodyHashPrefix = "body-sha256:"

// bodySHA256ID is the fallback identity "body-sha256:<lowercase hex SHA-256 of the raw body>".
func bodySHA256ID(body []byte) string {
	sum := sha256.Sum256(body)
	return bodyHashPrefix + hex.EncodeToString(sum[:])
}

// bodyHashIdentity is the identity function of providers that send no event id: the body's
// hash, which is never missing.
func bodyHashIdentity(req *Request) (string, error) { return bodySHA256ID(req.Body), nil }

// headerIdentity returns the first non-empty value among the named headers as the identity.
func headerIdentity(h Headers, names ...string) (string, error) {
	for _, n := range names {
		if v, _ := h.Get(n); v != "" {
			return v, nil
		}
	}
	return "", Reject(ReasonMissingEventID, "no %s header", strings.Join(names, " or "))
}

// jsonBodyIdentity is an identity function reading the string at path in the JSON body.
func jsonBodyIdentity(path ...string) func(*Request) (string, error) {
	return func(req *Request) (string, error) { return jsonBodyString(req.Body, path...) }
}
