package server

import (
	"crypto/sha256"
	"encoding/hex"
)

// OperationKey derives the stable idempotency key of an event: "op_" followed by the first 16
// bytes (32 hex digits) of SHA-256("hookverify operation key v1" NUL scope NUL eventID).
//
// It depends only on the dedupe scope and the provider's event id, so it is the same on every
// redelivery, after restarts, on every instance and across secret rotation, and endpoints that
// share a scope share keys. Scopes cannot contain NUL (endpoint validation), so the encoding is
// unambiguous. 128 bits make accidental collisions negligible. Consumers must treat it as opaque.
func OperationKey(scope, eventID string) string {
	h := sha256.New()
	h.Write([]byte("hookverify operation key v1\x00"))
	h.Write([]byte(scope))
	h.Write([]byte{0})
	h.Write([]byte(eventID))
	var sum [sha256.Size]byte
	return "op_" + hex.EncodeToString(h.Sum(sum[:0])[:16])
}
