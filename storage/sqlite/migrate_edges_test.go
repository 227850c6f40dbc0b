package sqlite

import (
	"database/sql"
	"errors"
	"path/filepath"
	"testing"

	"github.com/hookverify/hookverify/storage"
)

// TestFailedMigrationStepIsNotRecorded: a step that fails (here migration 25, whose table a
// file already holds in another shape) fails Open, and is not recorded as applied: the next
// start tries it again instead of running on a schema it never got.
func TestFailedMigrationStepIsNotRecorded(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "hookverify.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := CreateSchemaAt(t.Context(), db, 24); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE inbox_pending (something_else TEXT)`); err != nil {
		t.Fatal(err)
	}
	s, err := Open(t.Context(), path)
	if err == nil {
		s.Close()
		t.Fatal("Open of a file whose migration 25 cannot apply succeeded")
	}
	if !errors.Is(err, storage.ErrUnavailable) {
		t.Errorf("Open: %v, want ErrUnavailable", err)
	}
	var latest int
	if err := db.QueryRow(`SELECT max(version) FROM schema_migrations`).Scan(&latest); err != nil {
		t.Fatal(err)
	}
	if latest != 24 {
		t.Errorf("schema_migrations records version %d after step 25 failed, want 24", latest)
	}
}
