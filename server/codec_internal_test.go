package server

import (
	"context"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/hookverify/hookverify/internal/testpki"
	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
	"github.com/hookverify/hookverify/server/protocol"
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

// rawCodec sends and receives messages as the bytes given, so that a test can send what the
// protobuf library refuses to encode (a string that is not UTF-8).
type rawCodec struct{}

func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	return mem.BufferSlice{mem.SliceBuffer(*v.(*[]byte))}, nil
}

func (rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	*v.(*[]byte) = data.Materialize()
	return nil
}

func (rawCodec) Name() string { return "proto" }

// TestInvalidUTF8IsInvalidArgumentInStreams: a streaming call (health Watch here) whose
// message holds a string that is not UTF-8 is refused, not handed on emptied: Watch would
// otherwise answer for the service "" (the whole server) as if asked about it.
func TestInvalidUTF8IsInvalidArgumentInStreams(t *testing.T) {
	keyring := testpki.Keyring(t)
	srv, err := New(Options{Keyring: keyring, Protocols: protocol.Default(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	g := srv.NewGRPCServer()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = g.Serve(lis) }()
	t.Cleanup(g.Stop)
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.ForceCodecV2(rawCodec{})))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()

	watch := func(service string) error {
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		stream, err := conn.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true}, healthpb.Health_Watch_FullMethodName)
		if err != nil {
			return err
		}
		// Field 1, length-delimited: the service name, bytes as given.
		msg := append([]byte{0x0a, byte(len(service))}, service...)
		if err := stream.SendMsg(&msg); err != nil {
			return err
		}
		if err := stream.CloseSend(); err != nil {
			return err
		}
		var reply []byte
		return stream.RecvMsg(&reply)
	}
	if err := watch(""); err != nil {
		t.Fatalf("Watch of the whole server: %v", err)
	}
	if err := watch("\xff\xfe"); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("Watch of a service name that is not UTF-8: %v, want InvalidArgument", err)
	}
}
