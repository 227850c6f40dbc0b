package crdb

import (
	"context"
	"encoding/binary"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookverify/hookverify/storage"
)

// claimBatchStatement names claimBatchSQL prepared on a connection.
const claimBatchStatement = "hookverify_claim_batch"

// Element types of claimBatchSQL's array parameters.
const (
	oidBytea       = 17
	oidText        = 25
	oidTimestamptz = 1184
)

// claimBatchParams is how many parameters claimBatchSQL takes, each an array.
const claimBatchParams = 11

// binaryFormats asks for every parameter in binary.
var binaryFormats = func() []int16 {
	f := make([]int16, claimBatchParams)
	for i := range f {
		f[i] = 1
	}
	return f
}()

// postgresEpochUnix is 2000-01-01 UTC, where PostgreSQL's binary timestamps count
// microseconds from, in seconds since the Unix epoch.
const postgresEpochUnix = 946684800

// runClaimBatch runs claimBatchSQL for batch[i], i in idx, on conn (inside a transaction or
// not), and returns the identities it claimed.
//
// It sends the parameters encoded here rather than through pgx's type map: pgx encodes a
// slice parameter element by element through reflection and grows its buffer as it goes,
// which cost about an eighth of the server's CPU on new events, mostly copying each 2 KiB
// body several times. encodeClaimBatch sizes one buffer for all eleven arrays and copies each
// body once.
func runClaimBatch(ctx context.Context, conn *pgx.Conn, batch []storage.Delivery, idx []int) (map[identity]bool, error) {
	// Prepared once per connection; later calls find it in the connection's statement map.
	if _, err := conn.Prepare(ctx, claimBatchStatement, claimBatchSQL); err != nil {
		return nil, err
	}
	// Results in text: RETURNING gives two TEXT columns, whose text form is their bytes.
	rr := conn.PgConn().ExecPrepared(ctx, claimBatchStatement, encodeClaimBatch(batch, idx), binaryFormats, nil)
	inserted := make(map[identity]bool, len(idx))
	for rr.NextRow() {
		v := rr.Values()
		inserted[identity{string(v[0]), string(v[1])}] = true
	}
	if _, err := rr.Close(); err != nil {
		return nil, err
	}
	return inserted, nil
}

// encodeClaimBatch returns claimBatchSQL's parameters for batch[i], i in idx, in PostgreSQL's
// binary array format (what array_send writes; CockroachDB reads it too), all in one buffer.
func encodeClaimBatch(batch []storage.Delivery, idx []int) [][]byte {
	// Each array has a 20-byte header; each element a 4-byte length and its bytes.
	size := claimBatchParams * 20
	for _, i := range idx {
		d := &batch[i]
		size += claimBatchParams*4 + len(d.Scope) + len(d.EventID) + len(d.InboxID) + len(d.OperationKey) + 8 +
			len(d.EndpointID) + len(d.SecretID) + len(d.Method) + len(d.URL) + storage.EncodedHeadersBound(d.Headers) + len(d.Body)
	}
	buf := make([]byte, 0, size)
	params := make([][]byte, 0, claimBatchParams)
	// Each array is appended whole before its slice is taken, so the slices stay valid even if
	// buf had to grow; sized as above, it never does.
	text := func(field func(d *storage.Delivery) string) {
		start := len(buf)
		buf = appendArrayHeader(buf, oidText, len(idx))
		for _, i := range idx {
			v := field(&batch[i])
			buf = binary.BigEndian.AppendUint32(buf, uint32(len(v)))
			buf = append(buf, v...)
		}
		params = append(params, buf[start:])
	}
	text(func(d *storage.Delivery) string { return d.Scope })
	text(func(d *storage.Delivery) string { return d.EventID })
	text(func(d *storage.Delivery) string { return d.InboxID })
	text(func(d *storage.Delivery) string { return d.OperationKey })
	start := len(buf)
	buf = appendArrayHeader(buf, oidTimestamptz, len(idx))
	for _, i := range idx {
		buf = binary.BigEndian.AppendUint32(buf, 8)
		buf = binary.BigEndian.AppendUint64(buf, uint64(postgresMicroseconds(batch[i].ReceivedAt)))
	}
	params = append(params, buf[start:])
	text(func(d *storage.Delivery) string { return d.EndpointID })
	text(func(d *storage.Delivery) string { return d.SecretID })
	text(func(d *storage.Delivery) string { return d.Method })
	text(func(d *storage.Delivery) string { return d.URL })
	start = len(buf)
	buf = appendArrayHeader(buf, oidBytea, len(idx))
	for _, i := range idx {
		lengthAt := len(buf)
		buf = storage.AppendHeaders(append(buf, 0, 0, 0, 0), batch[i].Headers)
		binary.BigEndian.PutUint32(buf[lengthAt:], uint32(len(buf)-lengthAt-4))
	}
	params = append(params, buf[start:])
	start = len(buf)
	buf = appendArrayHeader(buf, oidBytea, len(idx))
	for _, i := range idx {
		// An empty body is an empty value, never NULL (which the column refuses).
		buf = binary.BigEndian.AppendUint32(buf, uint32(len(batch[i].Body)))
		buf = append(buf, batch[i].Body...)
	}
	return append(params, buf[start:])
}

// appendArrayHeader starts a one-dimensional array of n elements, none NULL, indexed from 1
// (an empty one too, as pgx writes it).
func appendArrayHeader(buf []byte, elemOID uint32, n int) []byte {
	buf = binary.BigEndian.AppendUint32(buf, 1) // dimensions
	buf = binary.BigEndian.AppendUint32(buf, 0) // no NULL elements
	buf = binary.BigEndian.AppendUint32(buf, elemOID)
	buf = binary.BigEndian.AppendUint32(buf, uint32(n))
	return binary.BigEndian.AppendUint32(buf, 1) // lower bound
}

// postgresMicroseconds is t as a binary TIMESTAMPTZ: microseconds since 2000-01-01 UTC,
// rounded down as pgx does.
func postgresMicroseconds(t time.Time) int64 {
	return (t.Unix()-postgresEpochUnix)*1_000_000 + int64(t.Nanosecond())/1_000
}
