package secretbox

import (
	"bytes"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
)

// FuzzParseKey: the master key comes from a file or the environment. Any text gives a 32-byte
// key or an error that never quotes the text; an accepted key re-encodes to the same key.
func FuzzParseKey(f *testing.F) {
	f.Add(base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, KeySize)) + "\n")
	f.Add(base64.RawStdEncoding.EncodeToString(bytes.Repeat([]byte{7}, KeySize)))
	f.Add("not base64 at all, and long enough to be noticed")
	f.Add("")
	f.Fuzz(func(t *testing.T, encoded string) {
		key, err := ParseKey(encoded)
		if err != nil {
			if trimmed := strings.TrimSpace(encoded); len(trimmed) >= 8 && strings.Contains(err.Error(), trimmed) {
				t.Fatalf("error %q quotes the key text", err)
			}
			return
		}
		if len(key) != KeySize {
			t.Fatalf("accepted a %d-byte key", len(key))
		}
		again, err := ParseKey(base64.StdEncoding.EncodeToString(key))
		if err != nil || !bytes.Equal(again, key) {
			t.Fatalf("re-encoded key does not parse back: %v", err)
		}
	})
}

// FuzzOpen: sealed values are read from the database, which may be corrupted or, for anyone
// able to write it, chosen. Opening any bytes under any ids never panics and fails with
// ErrOpen or ErrUnknownKey unless the bytes are exactly what Seal produced for those ids; a
// value sealed for one endpoint and secret opens only for them, to the same plaintext.
func FuzzOpen(f *testing.F) {
	k := bytes.Repeat([]byte{1}, KeySize)
	kr, err := NewKeyring(k, bytes.Repeat([]byte{2}, KeySize))
	if err != nil {
		f.Fatal(err)
	}
	_, sealed, err := kr.Seal("ep-1", "sec-1", []byte("whsec_abc"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(kr.CurrentKeyID(), "ep-1", "sec-1", sealed, []byte("whsec_abc"), uint16(0))
	f.Add("nope", "ep-1", "sec-1", []byte{1}, []byte{}, uint16(5))
	f.Add(KeyID(bytes.Repeat([]byte{2}, KeySize)), "ep-1\x00sec", "1", []byte{}, []byte("x"), uint16(40))
	f.Fuzz(func(t *testing.T, keyID, endpointID, secretID string, data, plaintext []byte, pos uint16) {
		if plain, err := kr.Open(keyID, endpointID, secretID, data); err == nil {
			// Only the seed opens: what Seal made (in the process that generated the seed corpus,
			// so with another random nonce than this process's sealed).
			if string(plain) != "whsec_abc" || endpointID != "ep-1" || secretID != "sec-1" {
				t.Fatalf("fuzzed bytes opened to %d bytes", len(plain))
			}
		} else if !errors.Is(err, ErrOpen) && !errors.Is(err, ErrUnknownKey) {
			t.Fatalf("Open: %v", err)
		}
		id, sealed, err := kr.Seal(endpointID, secretID, plaintext)
		if err != nil {
			t.Fatal(err)
		}
		got, err := kr.Open(id, endpointID, secretID, sealed)
		if err != nil || !bytes.Equal(got, plaintext) {
			t.Fatalf("round trip: %v", err)
		}
		if endpointID != "" && !strings.ContainsRune(endpointID+secretID, 0) {
			// Moving a byte between the ids must not let the value open for another row (ids
			// never hold NUL, the separator of the additional data).
			if _, err := kr.Open(id, endpointID[1:], string(endpointID[0])+secretID, sealed); err == nil {
				t.Fatal("opened for another (endpoint, secret) pair")
			}
		}
		bad := append([]byte(nil), sealed...)
		bad[int(pos)%len(bad)] ^= 0x01
		if _, err := kr.Open(id, endpointID, secretID, bad); err == nil {
			t.Fatal("a sealed value with a flipped bit opened")
		}
	})
}
