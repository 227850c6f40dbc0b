package server

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
)

// TestInvalidUTF8IsInvalidArgument: a request whose string field is not UTF-8 reaches no
// handler and is answered INVALID_ARGUMENT; valid requests decode as before, and a request
// that is not protobuf at all is still a decoding error.
func TestInvalidUTF8IsInvalidArgument(t *testing.T) {
	codec := newUTF8ReportingCodec()
	valid, err := proto.Marshal(&hookverifyv1.VerifyRequest{EndpointId: "ep-1", Method: "POST",
		Headers: []*hookverifyv1.HeaderField{{Name: "X-Sig", Value: "PLACEHOLDER"}}})
	if err != nil {
		t.Fatal(err)
	}
	invalid := []byte(strings.Replace(string(valid), "PLACEHOLDER", "\xff\xfe\xfd\xfc\xfb\xfa\xf9\xf8\xf7\xf6\xf5", 1))

	decode := func(data []byte) (*hookverifyv1.VerifyRequest, error) {
		req := &hookverifyv1.VerifyRequest{}
		return req, codec.Unmarshal(mem.BufferSlice{mem.SliceBuffer(data)}, req)
	}
	called := false
	handler := func(context.Context, any) (any, error) { called = true; return &hookverifyv1.VerifyResponse{}, nil }

	req, err := decode(valid)
	if err != nil || req.GetEndpointId() != "ep-1" || hasInvalidUTF8Marker(req) {
		t.Fatalf("valid request: %v, %v", req, err)
	}
	if _, err := rejectInvalidUTF8(t.Context(), req, &grpc.UnaryServerInfo{}, handler); err != nil || !called {
		t.Fatalf("valid request not handled: %v", err)
	}

	called = false
	req, err = decode(invalid)
	if err != nil || !hasInvalidUTF8Marker(req) || req.GetEndpointId() != "" {
		t.Fatalf("invalid UTF-8: %v, %v; want an empty, marked request", req, err)
	}
	_, err = rejectInvalidUTF8(t.Context(), req, &grpc.UnaryServerInfo{}, handler)
	if status.Code(err) != codes.InvalidArgument || called {
		t.Fatalf("invalid UTF-8: %v (handler called: %v), want INVALID_ARGUMENT before the handler", err, called)
	}

	if _, err := decode([]byte{0xff, 0xff, 0xff}); err == nil {
		t.Fatal("garbage decoded without error")
	}
}
