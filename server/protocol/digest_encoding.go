package protocol

import (
	"encoding/base64"
	"encoding/hex"
	"strconv"
)

// digestEncoding is how a provider writes a MAC's bytes in its header.
type digestEncoding int

const (
	digestHex       digestEncoding = iota // lowercase hex
	digestBase64                          // padded standard base64
	digestBase64URL                       // unpadded URL-safe base64
)

// decode decodes s as exactly size bytes in the encoding's canonical form (see decodeLowerHex,
// decodeStdBase64 and decodeRawURLBase64), so no two header strings carry the same signature.
func (e digestEncoding) decode(s string, size int) ([]byte, bool) {
	switch e {
	case digestHex:
		return decodeLowerHex(s, size)
	case digestBase64:
		return decodeStdBase64(s, size)
	case digestBase64URL:
		return decodeRawURLBase64(s, size)
	}
	return nil, false
}

// encode writes sum in the encoding.
func (e digestEncoding) encode(sum []byte) string {
	switch e {
	case digestBase64:
		return base64.StdEncoding.EncodeToString(sum)
	case digestBase64URL:
		return base64.RawURLEncoding.EncodeToString(sum)
	}
	return hex.EncodeToString(sum)
}

// String names the encoding, as in "32 bytes of lowercase hex".
func (e digestEncoding) String() string {
	switch e {
	case digestBase64:
		return "base64"
	case digestBase64URL:
		return "unpadded base64url"
	}
	return "lowercase hex"
}

// describe names the expected form of a size-byte digest for rejection details.
func (e digestEncoding) describe(size int) string {
	switch e {
	case digestBase64:
		return strconv.Itoa(size) + " bytes of padded base64"
	case digestBase64URL:
		return strconv.Itoa(size) + " bytes of unpadded base64url"
	}
	return strconv.Itoa(2*size) + " lowercase hex digits"
}

// decodeRawURLBase64 decodes s when it is exactly size bytes of unpadded base64url with
// canonical trailing bits, so no two header strings carry the same signature.
func decodeRawURLBase64(s string, size int) ([]byte, bool) {
	if len(s) != base64.RawURLEncoding.EncodedLen(size) {
		return nil, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] == '\r' || s[i] == '\n' {
			return nil, false
		}
	}
	out, err := base64.RawURLEncoding.Strict().DecodeString(s)
	if err != nil || len(out) != size {
		return nil, false
	}
	return out, true
}
