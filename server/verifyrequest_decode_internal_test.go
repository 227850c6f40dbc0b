package server

import (
	"bytes"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
)

// typicalVerifyRequest is what an edge sends: every field, several headers, a JSON body.
func typicalVerifyRequest(t testing.TB) []byte {
	wire, err := proto.Marshal(&hookverifyv1.VerifyRequest{
		EndpointId: "github-main",
		Body:       []byte(`{"action":"opened","number":1}`),
		Headers: []*hookverifyv1.HeaderField{
			{Name: "Content-Type", Value: "application/json"},
			{Name: "X-GitHub-Delivery", Value: "72d3162e-cc78-11e3-81ab-4c9367dc0958"},
			{Name: "X-Hub-Signature-256", Value: "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"},
			{Name: "X-Empty", Value: ""},
			{Name: "X-Käse", Value: "é"},
		},
		Method: "POST",
		Url:    "https://hooks.example.com/github?x=1",
	})
	if err != nil {
		t.Fatal(err)
	}
	return wire
}

// TestDecodeVerifyRequest: requests of the usual shape take the fast path and decode to what
// proto.Unmarshal gives; every other shape is left to proto.Unmarshal.
func TestDecodeVerifyRequest(t *testing.T) {
	field := func(num protowire.Number, value string) []byte {
		return protowire.AppendString(protowire.AppendTag(nil, num, protowire.BytesType), value)
	}
	header := func(inner ...[]byte) []byte {
		return protowire.AppendBytes(protowire.AppendTag(nil, verifyRequestHeaders, protowire.BytesType), bytes.Join(inner, nil))
	}
	typical := typicalVerifyRequest(t)
	fast := map[string][]byte{
		"typical": typical,
		"empty":   nil,
		// A repeated scalar field keeps its last occurrence, the body included.
		"repeated fields": bytes.Join([][]byte{typical, field(verifyRequestEndpointID, "second"),
			field(verifyRequestBody, "shorter"), field(verifyRequestHeaders, ""), field(verifyRequestMethod, "")}, nil),
		"repeated header name": header(field(headerFieldName, "a"), field(headerFieldValue, "1"), field(headerFieldName, "b")),
		"empty body":           field(verifyRequestBody, ""),
	}
	for name, wire := range fast {
		t.Run(name, func(t *testing.T) {
			want := &hookverifyv1.VerifyRequest{}
			if err := proto.Unmarshal(wire, want); err != nil {
				t.Fatal(err)
			}
			got := &hookverifyv1.VerifyRequest{EndpointId: "left over", Body: []byte("from before")}
			if !decodeVerifyRequest(wire, got) {
				t.Fatal("not decoded on the fast path")
			}
			if !proto.Equal(got, want) || (got.Body == nil) != (want.Body == nil) {
				t.Fatalf("decoded %v, proto.Unmarshal gives %v", got, want)
			}
		})
	}

	slow := map[string][]byte{
		"unknown field":         append(bytes.Clone(typical), field(6, "x")...),
		"varint for a string":   protowire.AppendVarint(protowire.AppendTag(nil, verifyRequestMethod, protowire.VarintType), 1),
		"invalid UTF-8 in url":  field(verifyRequestURL, "\xff"),
		"invalid UTF-8 header":  header(field(headerFieldValue, "\xc3")),
		"unknown header field":  header(field(3, "x")),
		"truncated":             typical[:len(typical)-1],
		"length past the end":   protowire.AppendVarint(protowire.AppendTag(nil, verifyRequestBody, protowire.BytesType), 10),
		"field number zero":     field(0, "x"),
		"group in header field": header(protowire.AppendTag(nil, headerFieldName, protowire.StartGroupType)),
	}
	for name, wire := range slow {
		t.Run(name, func(t *testing.T) {
			if decodeVerifyRequest(wire, &hookverifyv1.VerifyRequest{}) {
				t.Fatal("decoded on the fast path; want it left to proto.Unmarshal")
			}
		})
	}
}

// TestDecodedRequestOwnsItsBytes: the decoded request shares no memory with the wire bytes,
// which gRPC returns to its buffer pool once decoding is done.
func TestDecodedRequestOwnsItsBytes(t *testing.T) {
	wire := typicalVerifyRequest(t)
	want := &hookverifyv1.VerifyRequest{}
	if err := proto.Unmarshal(wire, want); err != nil {
		t.Fatal(err)
	}
	got := &hookverifyv1.VerifyRequest{}
	if !decodeVerifyRequest(wire, got) {
		t.Fatal("not decoded on the fast path")
	}
	clear(wire)
	if !proto.Equal(got, want) {
		t.Fatalf("after the wire bytes were reused: %v, want %v", got, want)
	}
}

// FuzzDecodeVerifyRequest holds the fast decoding to proto.Unmarshal: whatever it accepts,
// protobuf accepts too and decodes to an equal message.
func FuzzDecodeVerifyRequest(f *testing.F) {
	f.Add(typicalVerifyRequest(f))
	f.Add([]byte{})
	f.Add([]byte{0x0a, 0x01, 'a', 0x1a, 0x04, 0x0a, 0x02, 0xc3, 0xa9})
	f.Add([]byte{0x12, 0x80, 0x01})
	f.Fuzz(func(t *testing.T, wire []byte) {
		got := &hookverifyv1.VerifyRequest{}
		if !decodeVerifyRequest(wire, got) {
			return
		}
		want := &hookverifyv1.VerifyRequest{}
		if err := proto.Unmarshal(wire, want); err != nil {
			t.Fatalf("decoded on the fast path, but proto.Unmarshal says: %v", err)
		}
		if !proto.Equal(got, want) || (got.Body == nil) != (want.Body == nil) {
			t.Fatalf("decoded %v, proto.Unmarshal gives %v", got, want)
		}
	})
}
