package crdb

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookverify/hookverify/internal/pgtest"
	"github.com/hookverify/hookverify/storage"
)

// startupPooler stands in for a connection pooler such as PgBouncer between the store and
// PostgreSQL: it passes connections through, but a startup parameter it does not know
// (synchronous_commit) it either refuses, as PgBouncer does by default (FATAL 08P01
// "unsupported startup parameter"), or drops, as it does when told to ignore it
// (ignore_startup_parameters). It returns the URL to connect through it.
func startupPooler(t *testing.T, target, mode string) string {
	t.Helper()
	u := mustParseURL(t, target)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lis.Close() })
	backend := u.Host
	go func() {
		for {
			client, err := lis.Accept()
			if err != nil {
				return
			}
			go func() {
				defer client.Close()
				var head [8]byte
				if _, err := io.ReadFull(client, head[:]); err != nil {
					return
				}
				size := binary.BigEndian.Uint32(head[:4])
				if size < 8 || size > 10000 {
					return
				}
				body := make([]byte, size-8)
				if _, err := io.ReadFull(client, body); err != nil {
					return
				}
				var kept bytes.Buffer
				kept.Write(head[4:8])
				fields := bytes.Split(bytes.TrimRight(body, "\x00"), []byte{0})
				for i := 0; i+1 < len(fields); i += 2 {
					if string(fields[i]) == "synchronous_commit" {
						if mode == "refuse" {
							var msg bytes.Buffer
							for _, f := range []string{"SFATAL", "VFATAL", "C08P01", "Munsupported startup parameter: synchronous_commit"} {
								msg.WriteString(f)
								msg.WriteByte(0)
							}
							msg.WriteByte(0)
							out := []byte{'E', 0, 0, 0, 0}
							binary.BigEndian.PutUint32(out[1:], uint32(msg.Len()+4))
							_, _ = client.Write(append(out, msg.Bytes()...))
							return
						}
						continue
					}
					kept.Write(fields[i])
					kept.WriteByte(0)
					kept.Write(fields[i+1])
					kept.WriteByte(0)
				}
				kept.WriteByte(0)
				server, err := net.Dial("tcp", backend)
				if err != nil {
					return
				}
				defer server.Close()
				startup := binary.BigEndian.AppendUint32(nil, uint32(kept.Len()+4))
				if _, err := server.Write(append(startup, kept.Bytes()...)); err != nil {
					return
				}
				go func() { _, _ = io.Copy(server, client); server.Close() }()
				_, _ = io.Copy(client, server)
			}()
		}
	}()
	u.Host = lis.Addr().String()
	return u.String()
}

// TestSynchronousCommitThroughAPooler: where the database has synchronous_commit off, the
// store opens its sessions with it on, in their startup. A pooler in between (PgBouncer,
// as managed PostgreSQL services offer it) refuses a startup parameter it does not know, so
// every connection failed with 08P01, which reads as an outage: serve retried for ever, never
// ready, saying only "storage not ready". Or it is told to ignore it, and the sessions commit
// with off after all, the very loss of ACCEPTED deliveries it was meant to prevent, in
// silence. Open must say so at once (ErrInvalid), naming synchronous_commit and the ways out.
func TestSynchronousCommitThroughAPooler(t *testing.T) {
	url := pgtest.Shared(t).NewDatabase(t)
	if open(t, url).Engine() != EnginePostgreSQL {
		t.Skip("synchronous_commit is PostgreSQL's")
	}
	exec(t, connect(t, url), "ALTER DATABASE "+pgx.Identifier{strings.TrimPrefix(mustParseURL(t, url).Path, "/")}.Sanitize()+" SET synchronous_commit = off")
	for _, mode := range []string{"refuse", "drop"} {
		t.Run(mode, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			s, err := Open(ctx, startupPooler(t, url, mode))
			if err == nil {
				s.Close()
				t.Fatal("Open succeeded: its sessions commit with synchronous_commit off, or cannot connect")
			}
			if !errors.Is(err, storage.ErrInvalid) || errors.Is(err, storage.ErrUnavailable) || !strings.Contains(err.Error(), "synchronous_commit") {
				t.Errorf("Open: %v\nwant ErrInvalid naming synchronous_commit, not ErrUnavailable", err)
			}
		})
	}
	// A pooler told to ignore the setting drops the URL's own synchronous_commit=off too: that
	// is still the operator's choice, and the store opens.
	t.Run("the URL's choice, dropped", func(t *testing.T) {
		s, err := Open(t.Context(), withParam(t, startupPooler(t, url, "drop"), "synchronous_commit", "off"))
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		s.Close()
	})
}
