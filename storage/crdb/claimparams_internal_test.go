package crdb

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/hookverify/hookverify/storage"
)

// TestEncodeClaimBatchMatchesPgx checks the hand-written parameter encoding against pgx's own
// binary encoding of the same values, byte for byte, and decodes it back with pgx.
func TestEncodeClaimBatchMatchesPgx(t *testing.T) {
	at := time.Date(2031, 3, 4, 5, 6, 7, 123456789, time.FixedZone("x", 3600))
	batch := []storage.Delivery{
		{Scope: "s", EventID: "evt-1", InboxID: "i1", OperationKey: "k1", ReceivedAt: at, EndpointID: "e",
			SecretID: "sec", Method: "POST", URL: "https://x/1", Headers: []storage.Header{{Name: "A", Value: "1"}, {Name: "A", Value: "2"}},
			Body: []byte(`{"id":"evt-1"}`)},
		{Scope: "s", EventID: "ünïcødé \x00 id", InboxID: "i2", OperationKey: "k2", ReceivedAt: time.Date(1999, 12, 31, 23, 59, 59, 999999999, time.UTC),
			EndpointID: "e", Method: "GET", Body: nil},
		{Scope: "other", EventID: strings.Repeat("e", 512), InboxID: "i3", OperationKey: "k3", ReceivedAt: at.Add(time.Hour),
			EndpointID: "e2", SecretID: "s2", Method: "PUT", URL: "u", Headers: []storage.Header{{Name: "b", Value: string([]byte{0xff, 0})}},
			Body: bytes.Repeat([]byte{0, 1, 2}, 700)},
	}
	m := pgtype.NewMap()
	for _, idx := range [][]int{{0, 1, 2}, {2, 0}, {1}, {}} {
		params := encodeClaimBatch(batch, idx)
		if len(params) != claimBatchParams {
			t.Fatalf("%d parameters, want %d", len(params), claimBatchParams)
		}
		var (
			texts   [9][]string
			times   []time.Time
			headers [][]byte
			bodies  [][]byte
		)
		field := func(f func(d storage.Delivery) string) []string {
			out := []string{}
			for _, i := range idx {
				out = append(out, f(batch[i]))
			}
			return out
		}
		texts[0] = field(func(d storage.Delivery) string { return d.Scope })
		texts[1] = field(func(d storage.Delivery) string { return d.EventID })
		texts[2] = field(func(d storage.Delivery) string { return d.InboxID })
		texts[3] = field(func(d storage.Delivery) string { return d.OperationKey })
		texts[5] = field(func(d storage.Delivery) string { return d.EndpointID })
		texts[6] = field(func(d storage.Delivery) string { return d.SecretID })
		texts[7] = field(func(d storage.Delivery) string { return d.Method })
		texts[8] = field(func(d storage.Delivery) string { return d.URL })
		times, headers, bodies = []time.Time{}, [][]byte{}, [][]byte{}
		for _, i := range idx {
			times = append(times, batch[i].ReceivedAt)
			headers = append(headers, storage.EncodeHeaders(batch[i].Headers))
			bodies = append(bodies, append([]byte{}, batch[i].Body...))
		}
		for p, want := range []struct {
			oid   uint32
			value any
		}{
			{pgtype.TextArrayOID, texts[0]}, {pgtype.TextArrayOID, texts[1]}, {pgtype.TextArrayOID, texts[2]},
			{pgtype.TextArrayOID, texts[3]}, {pgtype.TimestamptzArrayOID, times}, {pgtype.TextArrayOID, texts[5]},
			{pgtype.TextArrayOID, texts[6]}, {pgtype.TextArrayOID, texts[7]}, {pgtype.TextArrayOID, texts[8]},
			{pgtype.ByteaArrayOID, headers}, {pgtype.ByteaArrayOID, bodies},
		} {
			pgxEncoded, err := m.Encode(want.oid, pgtype.BinaryFormatCode, want.value, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(params[p], pgxEncoded) {
				t.Errorf("deliveries %v, parameter %d:\n got %x\nwant %x (pgx)", idx, p+1, params[p], pgxEncoded)
			}
		}
		var gotTimes []time.Time
		if err := m.Scan(pgtype.TimestamptzArrayOID, pgtype.BinaryFormatCode, params[4], &gotTimes); err != nil {
			t.Fatal(err)
		}
		for j, i := range idx {
			if want := batch[i].ReceivedAt.Truncate(time.Microsecond); !gotTimes[j].Equal(want) {
				t.Errorf("time %d decodes as %v, want %v", j, gotTimes[j], want)
			}
		}
		var gotBodies [][]byte
		if err := m.Scan(pgtype.ByteaArrayOID, pgtype.BinaryFormatCode, params[10], &gotBodies); err != nil {
			t.Fatal(err)
		}
		for j, i := range idx {
			if !bytes.Equal(gotBodies[j], batch[i].Body) || gotBodies[j] == nil {
				t.Errorf("body %d decodes as %q (nil %v), want %q and never NULL", j, gotBodies[j], gotBodies[j] == nil, batch[i].Body)
			}
		}
	}
}
