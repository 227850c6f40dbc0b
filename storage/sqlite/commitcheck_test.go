package sqlite

import (
	"database/sql"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/hookverify/hookverify/storage"
)

// TestFilesCheckedAgainJustBeforeCommit covers the second look at the files in inWriteTxAs,
// the one between a transaction's statements and its commit: a file deleted or replaced
// while the transaction ran (after the first look) must fail it, uncommitted, and not let it
// commit into a log that is gone at the next start. The transaction's own work (fn) is the
// moment between the two looks, so it removes or replaces the file itself.
func TestFilesCheckedAgainJustBeforeCommit(t *testing.T) {
	replace := func(t *testing.T, path string) {
		t.Helper()
		src, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer src.Close()
		tmp := path + ".copy"
		dst, err := os.Create(tmp)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(dst, src); err != nil {
			t.Fatal(err)
		}
		if err := dst.Close(); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
	}
	remove := func(t *testing.T, path string) {
		t.Helper()
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name   string
		suffix string
		change func(t *testing.T, path string)
		// reopen: the database at the path must hold the earlier commit and not the failed
		// transaction's (the log's content rescued into the file).
		reopen bool
	}{
		{"database file deleted", "", remove, false},
		{"database file replaced", "", replace, false},
		{"write-ahead log deleted", "-wal", remove, true},
		{"write-ahead log replaced", "-wal", replace, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			path := filepath.Join(t.TempDir(), "hookverify.db")
			s, err := Open(ctx, path)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			err = s.inWriteTx(ctx, func(tx *sql.Tx) error {
				if _, err := tx.Exec(`CREATE TABLE review_probe (x INTEGER NOT NULL)`); err != nil {
					return err
				}
				_, err := tx.Exec(`INSERT INTO review_probe (x) VALUES (1)`)
				return err
			})
			if err != nil {
				t.Fatalf("first write: %v", err)
			}
			err = s.inWriteTx(ctx, func(tx *sql.Tx) error {
				if _, err := tx.Exec(`INSERT INTO review_probe (x) VALUES (2)`); err != nil {
					return err
				}
				tc.change(t, s.files.dbPath+tc.suffix)
				return nil
			})
			if _, ok := errors.AsType[filesError](err); !ok {
				t.Fatalf("write whose file went before its commit: %v, want the files' error (the write committed into a file gone at the next start)", err)
			}
			if err := s.fail("probe", err); !errors.Is(err, storage.ErrUnavailable) {
				t.Fatalf("mapped error %v, want ErrUnavailable", err)
			}
			if !tc.reopen {
				return
			}
			_ = s.Close()
			s2, err := Open(ctx, path)
			if err != nil {
				t.Fatalf("reopen: %v", err)
			}
			defer s2.Close()
			var xs []int
			rows, err := s2.reader.QueryContext(ctx, `SELECT x FROM review_probe ORDER BY x`)
			if err != nil {
				t.Fatalf("read after reopen: %v", err)
			}
			for rows.Next() {
				var x int
				if err := rows.Scan(&x); err != nil {
					t.Fatal(err)
				}
				xs = append(xs, x)
			}
			if err := rows.Err(); err != nil {
				t.Fatal(err)
			}
			if len(xs) != 1 || xs[0] != 1 {
				t.Fatalf("after reopen the database holds %v, want [1]: the earlier commit kept, the refused one not", xs)
			}
		})
	}
}
