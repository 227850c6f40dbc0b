package storage

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
)

func TestHeadersRoundTrip(t *testing.T) {
	t.Parallel()
	cases := [][]Header{
		{},
		{{Name: "Stripe-Signature", Value: "t=1,v1=ab"}},
		{{Name: "X-A", Value: "1"}, {Name: "x-a", Value: "2"}, {Name: "", Value: ""}},
		{{Name: "Bin", Value: "\x00\xff\xfe not utf-8"}},
	}
	for _, in := range cases {
		out, err := DecodeHeaders(EncodeHeaders(in))
		if err != nil {
			t.Fatalf("decode(%q): %v", in, err)
		}
		if !reflect.DeepEqual(out, in) {
			t.Fatalf("round trip: got %q, want %q", out, in)
		}
	}
}

func FuzzDecodeHeaders(f *testing.F) {
	f.Add(EncodeHeaders([]Header{{Name: "a", Value: "b"}}))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		headers, err := DecodeHeaders(data)
		if err != nil {
			return
		}
		again, err := DecodeHeaders(EncodeHeaders(headers))
		if err != nil || !reflect.DeepEqual(again, headers) {
			t.Fatalf("re-encoding a decoded value changed it: %v", err)
		}
	})
}

// FuzzEncodeHeaders: the headers stored in the inbox are any bytes a provider (or anyone
// posting to the edge) sent. Encoding keeps every byte, the order and the repeats: any list
// decodes back to itself, EncodedHeadersBound is a bound, and a truncated encoding is an
// ErrUnreadable error rather than a shorter list.
func FuzzEncodeHeaders(f *testing.F) {
	f.Add("Stripe-Signature", "t=1,v1=ab", "x-a", "\x00\xff", uint8(2))
	f.Add("", "", "", "", uint8(0))
	f.Add("\x80", "\xff\xff\xff\xff\x0f", "a", "", uint8(200))
	f.Fuzz(func(t *testing.T, n1, v1, n2, v2 string, repeat uint8) {
		var in []Header
		for i := 0; i < int(repeat%8); i++ {
			in = append(in, Header{Name: n1, Value: v1}, Header{Name: n2, Value: v2})
		}
		in = append(in, Header{Name: v1, Value: n2})
		enc := EncodeHeaders(in)
		if len(enc) > EncodedHeadersBound(in) {
			t.Fatalf("encoding is %d bytes, bound %d", len(enc), EncodedHeadersBound(in))
		}
		out, err := DecodeHeaders(enc)
		if err != nil || !reflect.DeepEqual(out, in) {
			t.Fatalf("round trip: %q, %v; want %q", out, err, in)
		}
		if !bytes.Equal(AppendHeaders([]byte("prefix"), in)[6:], enc) {
			t.Fatal("AppendHeaders differs from EncodeHeaders")
		}
		cut := len(enc) - 1 - int(repeat)%len(enc)
		if _, err := DecodeHeaders(enc[:cut]); !errors.Is(err, ErrUnreadable) {
			t.Fatalf("truncated to %d of %d bytes: %v, want ErrUnreadable", cut, len(enc), err)
		}
	})
}
