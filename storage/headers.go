package storage

import (
	"encoding/binary"
	"fmt"
)

// maxEncodedHeaders bounds decoding so a corrupt row cannot make us allocate without limit.
const maxEncodedHeaders = 1 << 16

// EncodeHeaders serialises headers losslessly (any bytes, order and repeats kept) for storage in
// a BYTEA/BLOB column: a uvarint count, then for each header the uvarint length and bytes of its
// name and of its value. JSON is not used because it would alter invalid UTF-8.
func EncodeHeaders(headers []Header) []byte {
	return AppendHeaders(make([]byte, 0, EncodedHeadersBound(headers)), headers)
}

// AppendHeaders appends EncodeHeaders(headers) to buf.
func AppendHeaders(buf []byte, headers []Header) []byte {
	buf = binary.AppendUvarint(buf, uint64(len(headers)))
	for _, h := range headers {
		buf = binary.AppendUvarint(buf, uint64(len(h.Name)))
		buf = append(buf, h.Name...)
		buf = binary.AppendUvarint(buf, uint64(len(h.Value)))
		buf = append(buf, h.Value...)
	}
	return buf
}

// EncodedHeadersBound is at least len(EncodeHeaders(headers)).
func EncodedHeadersBound(headers []Header) int {
	size := binary.MaxVarintLen64
	for _, h := range headers {
		size += 2*binary.MaxVarintLen64 + len(h.Name) + len(h.Value)
	}
	return size
}

// DecodeHeaders reverses EncodeHeaders. It returns an error wrapping ErrUnreadable for
// truncated or oversized input.
func DecodeHeaders(data []byte) ([]Header, error) {
	headers, err := decodeHeaders(data)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnreadable, err)
	}
	return headers, nil
}

func decodeHeaders(data []byte) ([]Header, error) {
	n, rest, err := readUvarint(data)
	if err != nil {
		return nil, err
	}
	if n > maxEncodedHeaders {
		return nil, fmt.Errorf("storage: encoded headers claim %d entries", n)
	}
	headers := make([]Header, 0, n)
	for i := uint64(0); i < n; i++ {
		var name, value string
		if name, rest, err = readString(rest); err != nil {
			return nil, err
		}
		if value, rest, err = readString(rest); err != nil {
			return nil, err
		}
		headers = append(headers, Header{Name: name, Value: value})
	}
	if len(rest) != 0 {
		return nil, fmt.Errorf("storage: %d trailing bytes after encoded headers", len(rest))
	}
	return headers, nil
}

func readUvarint(data []byte) (uint64, []byte, error) {
	v, n := binary.Uvarint(data)
	if n <= 0 {
		return 0, nil, fmt.Errorf("storage: corrupt encoded headers")
	}
	return v, data[n:], nil
}

func readString(data []byte) (string, []byte, error) {
	n, rest, err := readUvarint(data)
	if err != nil {
		return "", nil, err
	}
	if n > uint64(len(rest)) {
		return "", nil, fmt.Errorf("storage: truncated encoded headers")
	}
	return string(rest[:n]), rest[n:], nil
}
