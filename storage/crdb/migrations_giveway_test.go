package crdb

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// TestMigrationGivesWayForAsLongAsALongTransactionLasts: the migration's bound on a table lock
// is short, and it keeps giving way (not giving up) for as long as the long transaction lasts.
// TestMigrationBehindALongTransactionLetsIntakeThrough passes when each claim waits as long as
// the lock wait lasts (its claims' contexts do not end a batch), and when the migration stops
// after a few immediate retries but the transaction happens to end before: so here each claim
// must answer promptly, and the transaction lasts well past a few lock timeouts.
func TestMigrationGivesWayForAsLongAsALongTransactionLasts(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s, admin, holder, migrated := migrateBehindALongTransaction(t)

	// For 3 s (many lock timeouts and more than a few immediate retries), claims answer
	// promptly and the migration neither applies nor gives up.
	const prompt = 2 * time.Second
	until := time.Now().Add(3 * time.Second)
	for i := 1; time.Now().Before(until); i++ {
		id := fmt.Sprintf("in-%d", i)
		start := time.Now()
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		r, err := s.Claim(cctx, delivery("evt-"+id, id))
		cancel()
		if took := time.Since(start); took > prompt {
			t.Fatalf("claim %d took %v while the migration waited for the long transaction (stalled behind its lock)", i, took)
		}
		if err != nil || !r.Accepted {
			t.Fatalf("claim %d while the migration waits for the long transaction: %+v, %v", i, r, err)
		}
		select {
		case err := <-migrated:
			t.Fatalf("Migrate returned while the long transaction held its lock: %v", err)
		default:
		}
		time.Sleep(100 * time.Millisecond)
	}

	exec(t, holder, `COMMIT`)
	select {
	case err := <-migrated:
		if err != nil {
			t.Fatalf("Migrate after the long transaction ended: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Migrate did not finish after the long transaction ended")
	}
	wantAllMigrations(t, admin, EnginePostgreSQL)
}
