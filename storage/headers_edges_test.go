package storage

import (
	"encoding/binary"
	"errors"
	"testing"
)

// encodedEmptyHeaders is the encoding of n headers with empty names and values, n written as
// given even past maxEncodedHeaders.
func encodedEmptyHeaders(n int) []byte {
	buf := binary.AppendUvarint(nil, uint64(n))
	return append(buf, make([]byte, 2*n)...)
}

// TestDecodeHeadersCountBound: a stored list of up to maxEncodedHeaders headers decodes; one
// claiming more is unreadable, even when every entry it claims is there.
func TestDecodeHeadersCountBound(t *testing.T) {
	t.Parallel()
	if h, err := DecodeHeaders(encodedEmptyHeaders(maxEncodedHeaders)); err != nil || len(h) != maxEncodedHeaders {
		t.Errorf("%d headers: %d decoded, %v", maxEncodedHeaders, len(h), err)
	}
	if h, err := DecodeHeaders(encodedEmptyHeaders(maxEncodedHeaders + 1)); !errors.Is(err, ErrUnreadable) {
		t.Errorf("%d headers: %d decoded, %v; want ErrUnreadable", maxEncodedHeaders+1, len(h), err)
	}
}

// TestDecodeHeadersRefusesTrailingBytes: bytes after the last header mean a corrupt record,
// not a shorter list: the record is unreadable.
func TestDecodeHeadersRefusesTrailingBytes(t *testing.T) {
	t.Parallel()
	enc := append(EncodeHeaders([]Header{{Name: "X-A", Value: "1"}}), 0)
	if h, err := DecodeHeaders(enc); !errors.Is(err, ErrUnreadable) {
		t.Errorf("with a trailing byte: %q, %v; want ErrUnreadable", h, err)
	}
}

// TestEncodedHeadersBoundOfNoHeaders: the bound holds for an empty list too, whose encoding is
// its count alone.
func TestEncodedHeadersBoundOfNoHeaders(t *testing.T) {
	t.Parallel()
	for _, h := range [][]Header{nil, {}} {
		if n, bound := len(EncodeHeaders(h)), EncodedHeadersBound(h); n > bound {
			t.Errorf("no headers: encoding is %d bytes, bound %d", n, bound)
		}
	}
}
