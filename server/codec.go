package server

import (
	"context"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	_ "google.golang.org/grpc/encoding/proto" // registers the "proto" codec wrapped here
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// invalidUTF8Field is the field number of the marker utf8ReportingCodec leaves on a request
// that did not decode because a string field held invalid UTF-8: the largest field number
// protobuf allows, which no hookverify message uses.
const invalidUTF8Field protowire.Number = protowire.MaxValidNumber

// utf8ReportingCodec is gRPC's proto codec, except for requests whose string fields are not
// valid UTF-8 (proto3 requires it). gRPC itself would answer those INTERNAL ("failed to
// unmarshal") before any interceptor runs; instead the request decodes as an empty message
// carrying a marker, and rejectInvalidUTF8 answers INVALID_ARGUMENT, which is what it is: the
// edge sent a header value, endpoint id, method or URL that no HTTP server should forward.
type utf8ReportingCodec struct{ encoding.CodecV2 }

func newUTF8ReportingCodec() utf8ReportingCodec {
	return utf8ReportingCodec{encoding.GetCodecV2("proto")}
}

func (c utf8ReportingCodec) Unmarshal(data mem.BufferSlice, v any) error {
	err := c.CodecV2.Unmarshal(data, v)
	m, ok := v.(proto.Message)
	if err == nil || !ok || !strings.Contains(err.Error(), "invalid UTF-8") {
		return err
	}
	proto.Reset(m)
	m.ProtoReflect().SetUnknown(protowire.AppendVarint(protowire.AppendTag(nil, invalidUTF8Field, protowire.VarintType), 1))
	return nil
}

// hasInvalidUTF8Marker reports whether utf8ReportingCodec marked the request.
func hasInvalidUTF8Marker(req any) bool {
	m, ok := req.(proto.Message)
	if !ok {
		return false
	}
	unknown := m.ProtoReflect().GetUnknown()
	for len(unknown) > 0 {
		num, typ, n := protowire.ConsumeTag(unknown)
		if n < 0 {
			return false
		}
		if num == invalidUTF8Field && typ == protowire.VarintType {
			return true
		}
		unknown = unknown[n:]
		if n = protowire.ConsumeFieldValue(num, typ, unknown); n < 0 {
			return false
		}
		unknown = unknown[n:]
	}
	return false
}

// rejectInvalidUTF8 answers a request the codec marked with INVALID_ARGUMENT, before any
// handler (or authorization, which would read the emptied request) sees it.
func rejectInvalidUTF8(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if hasInvalidUTF8Marker(req) {
		return nil, errInvalidUTF8
	}
	return handler(ctx, req)
}

var errInvalidUTF8 = status.Error(codes.InvalidArgument,
	"a string field of the request (a header value, the endpoint id, the method or the URL) is not valid UTF-8; the edge must refuse such an HTTP request itself (400)")

// rejectInvalidUTF8InStreams does for streaming calls (health Watch, reflection) what
// rejectInvalidUTF8 does for unary ones: a message the codec marked is refused rather than
// handed on emptied, as if the caller had sent no fields.
func rejectInvalidUTF8InStreams(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	return handler(srv, utf8CheckingStream{ss})
}

type utf8CheckingStream struct{ grpc.ServerStream }

func (s utf8CheckingStream) RecvMsg(m any) error {
	if err := s.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	if hasInvalidUTF8Marker(m) {
		return errInvalidUTF8
	}
	return nil
}
