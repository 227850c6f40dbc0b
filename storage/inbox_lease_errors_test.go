package storage

import (
	"errors"
	"fmt"
	"testing"
)

// TestOnlyUnreadableRecordsFailALeaseAlone: a batch of leases whose commit fails on a lease's
// own statement for any reason but an unreadable record (the disk, a busy database) fails as a
// whole, every caller told, and is not run again: run again without that lease, the others
// could be leased around a failure that is no lease's own, the failing lease's caller alone
// told. An unreadable record fails its lease alone, and the batch runs again without it; a
// failure that is no lease's (index -1) fails the batch, even when it says unreadable.
func TestOnlyUnreadableRecordsFailALeaseAlone(t *testing.T) {
	busy := errors.New("database is locked")
	unreadable := fmt.Errorf("inbox record %q: %w", "in-1", ErrUnreadable)
	// run is one run of the commit's answer; the runs after those listed succeed.
	type run struct {
		failed int
		err    error
	}
	for _, c := range []struct {
		name     string
		fails    []run
		wantErr  error
		wantRuns int
		wantErrs []error
	}{
		{"another error fails the batch", []run{{1, busy}}, busy, 1, []error{nil, nil, nil}},
		{"an unreadable record fails its lease alone", []run{{1, unreadable}}, nil, 2, []error{nil, unreadable, nil}},
		{"an unreadable failure of no lease fails the batch", []run{{-1, unreadable}}, unreadable, 1, []error{nil, nil, nil}},
	} {
		t.Run(c.name, func(t *testing.T) {
			errs := make([]error, 3)
			runs := 0
			err := WithoutUnreadableLeases(errs, func() (int, error) {
				runs++
				if runs > len(c.fails) {
					return -1, nil
				}
				return c.fails[runs-1].failed, c.fails[runs-1].err
			})
			if !errors.Is(err, c.wantErr) || (c.wantErr == nil && err != nil) || runs != c.wantRuns {
				t.Fatalf("WithoutUnreadableLeases = %v after %d runs, want %v after %d", err, runs, c.wantErr, c.wantRuns)
			}
			for i := range errs {
				if errs[i] != c.wantErrs[i] {
					t.Errorf("errs[%d] = %v, want %v", i, errs[i], c.wantErrs[i])
				}
			}
		})
	}
}
