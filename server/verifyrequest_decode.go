package server

import (
	"strings"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"

	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
)

// Field numbers of VerifyRequest and HeaderField (proto/hookverify/v1/verifier.proto).
const (
	verifyRequestEndpointID protowire.Number = 1
	verifyRequestBody       protowire.Number = 2
	verifyRequestHeaders    protowire.Number = 3
	verifyRequestMethod     protowire.Number = 4
	verifyRequestURL        protowire.Number = 5
	headerFieldName         protowire.Number = 1
	headerFieldValue        protowire.Number = 2
)

// decodeVerifyRequest decodes the wire form of a VerifyRequest into req (which it resets) as
// proto.Unmarshal would, for the shape every edge sends: only the declared fields, each with
// its declared wire type, and strings that are valid UTF-8. For anything else (an unknown
// field, another wire type, invalid UTF-8, malformed input) it reports false and the caller
// decodes with proto.Unmarshal, so every unusual request keeps protobuf's own answer.
//
// Why not proto.Unmarshal always: on a redelivery answered from memory, protobuf's
// table-driven decoding of the 2 KiB request was the largest cost of the server's own,
// allocating every string and header separately. Here every string field is a substring of
// one string holding all of them, the headers share one array, and the body is one copy: four
// allocations in all. Nothing aliases wire, which belongs to gRPC's buffer pool.
// FuzzDecodeVerifyRequest holds it to proto.Unmarshal.
func decodeVerifyRequest(wire []byte, req *hookverifyv1.VerifyRequest) bool {
	// First pass: check the shape, count the headers and size the text.
	headers, textLen, bodyLen, ok := scanVerifyRequest(wire)
	if !ok {
		return false
	}
	req.Reset()
	var text strings.Builder
	text.Grow(textLen)
	fields := make([]hookverifyv1.HeaderField, headers)
	if headers > 0 {
		req.Headers = make([]*hookverifyv1.HeaderField, 0, headers)
	}
	if bodyLen > 0 {
		req.Body = make([]byte, 0, bodyLen)
	}
	// Second pass: the shape is known to be good, so only copy. Strings are recorded as
	// offsets into text and cut from it once it is complete; a repeated scalar field keeps
	// its last occurrence, as protobuf does.
	type span struct{ start, end int }
	var endpointID, method, url span
	headerSpans := make([][2]span, 0, headers)
	appendText := func(v []byte) span {
		start := text.Len()
		text.Write(v)
		return span{start, text.Len()}
	}
	for rest := wire; len(rest) > 0; {
		num, _, n := protowire.ConsumeTag(rest)
		rest = rest[n:]
		v, n := protowire.ConsumeBytes(rest)
		rest = rest[n:]
		switch num {
		case verifyRequestEndpointID:
			endpointID = appendText(v)
		case verifyRequestBody:
			req.Body = append(req.Body[:0], v...)
		case verifyRequestMethod:
			method = appendText(v)
		case verifyRequestURL:
			url = appendText(v)
		case verifyRequestHeaders:
			var name, value span
			for len(v) > 0 {
				fnum, _, n := protowire.ConsumeTag(v)
				v = v[n:]
				fv, n := protowire.ConsumeBytes(v)
				v = v[n:]
				if fnum == headerFieldName {
					name = appendText(fv)
				} else {
					value = appendText(fv)
				}
			}
			headerSpans = append(headerSpans, [2]span{name, value})
		}
	}
	all := text.String()
	cut := func(s span) string { return all[s.start:s.end] }
	req.EndpointId, req.Method, req.Url = cut(endpointID), cut(method), cut(url)
	if len(req.Body) == 0 {
		req.Body = nil // protobuf leaves an empty bytes field nil
	}
	for i, h := range headerSpans {
		fields[i].Name, fields[i].Value = cut(h[0]), cut(h[1])
		req.Headers = append(req.Headers, &fields[i])
	}
	return true
}

// scanVerifyRequest checks that wire is a VerifyRequest decodeVerifyRequest can decode, and
// returns the number of headers, the total length of the string fields and the length of the
// body that will be kept (the last occurrence's).
func scanVerifyRequest(wire []byte) (headers, textLen, bodyLen int, ok bool) {
	for rest := wire; len(rest) > 0; {
		num, v, n := consumeLengthDelimited(rest)
		if n < 0 {
			return 0, 0, 0, false
		}
		rest = rest[n:]
		switch num {
		case verifyRequestEndpointID, verifyRequestMethod, verifyRequestURL:
			if !utf8.Valid(v) {
				return 0, 0, 0, false
			}
			textLen += len(v)
		case verifyRequestBody:
			bodyLen = len(v)
		case verifyRequestHeaders:
			for len(v) > 0 {
				fnum, fv, n := consumeLengthDelimited(v)
				if n < 0 || (fnum != headerFieldName && fnum != headerFieldValue) || !utf8.Valid(fv) {
					return 0, 0, 0, false
				}
				v = v[n:]
				textLen += len(fv)
			}
			headers++
		default:
			return 0, 0, 0, false
		}
	}
	return headers, textLen, bodyLen, true
}

// consumeLengthDelimited reads one length-delimited field from b: its number, its value and
// the bytes it took, or n < 0 if b does not start with one.
func consumeLengthDelimited(b []byte) (num protowire.Number, v []byte, n int) {
	num, typ, tagLen := protowire.ConsumeTag(b)
	if tagLen < 0 || typ != protowire.BytesType {
		return 0, nil, -1
	}
	v, valueLen := protowire.ConsumeBytes(b[tagLen:])
	if valueLen < 0 {
		return 0, nil, -1
	}
	return num, v, tagLen + valueLen
}
