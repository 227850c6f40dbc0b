package storage

import (
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
