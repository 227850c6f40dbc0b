package server

import (
	"errors"
	"testing"
	"time"
)

// TestClaimCacheFailureCountsFromWhenItWasSeen: a store failure silences the cache from when
// the failing call ended, not from when it started: a call that succeeded after starting
// while the failing one was in flight does not make the cache answer again.
func TestClaimCacheFailureCountsFromWhenItWasSeen(t *testing.T) {
	now := time.Now()
	c := cacheHoldingAClaim(time.Hour, now)
	failingStarted := time.Now() // a slow call that will fail
	time.Sleep(time.Millisecond)
	okStarted := time.Now() // a call started while it is in flight, which succeeds
	time.Sleep(time.Millisecond)
	c.storeCallEnded(failingStarted, errors.New("connection reset"))
	c.storeCallEnded(okStarted, nil)
	if _, ok := c.get("s", "e", now); ok {
		t.Fatal("the cache answered after a failure, on the strength of a call that started before the failure was seen")
	}
}

// TestClaimCachePutRefreshesAnEntry: putting a claim the cache holds already restarts its
// TTL, so that a claim read back from the store after its entry expired is trusted again.
func TestClaimCachePutRefreshesAnEntry(t *testing.T) {
	const ttl = 50 * time.Millisecond
	now := time.Now()
	c := cacheHoldingAClaim(ttl, now)
	time.Sleep(ttl + 10*time.Millisecond)
	if _, ok := c.get("s", "e", now); ok {
		t.Fatal("an entry older than the TTL was trusted")
	}
	put := time.Now()
	c.put("s", "e", claimAt("i", now)) // read back from the store
	got, ok := c.get("s", "e", now)
	if !ok && time.Since(put) < ttl { // unless this goroutine was held off the CPU for a TTL
		t.Fatal("a claim put again after its entry expired was not trusted")
	}
	if ok && got.InboxID != "i" {
		t.Fatalf("got %+v", got)
	}
}

// TestClaimCacheSuccessMustStartAfterTheFailure: only a call that started strictly after the
// latest failure was seen makes the cache answer again; one that started at that very instant
// cannot be shown to have met the store after it failed.
func TestClaimCacheSuccessMustStartAfterTheFailure(t *testing.T) {
	now := time.Now()
	c := cacheHoldingAClaim(time.Hour, now)
	c.storeCallEnded(time.Now(), errors.New("connection reset"))
	failedAt := c.base.Add(time.Duration(c.failedAt.Load() - 1))
	c.storeCallEnded(failedAt, nil)
	if _, ok := c.get("s", "e", now); ok {
		t.Fatal("a success started at the instant of the failure made the cache answer again")
	}
	c.storeCallEnded(failedAt.Add(time.Nanosecond), nil)
	if _, ok := c.get("s", "e", now); !ok {
		t.Fatal("a success started after the failure did not make the cache answer again")
	}
}
