package server

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/hookverify/hookverify/storage"
)

func claimAt(inbox string, at time.Time) storage.ClaimResult {
	return storage.ClaimResult{Accepted: true, InboxID: inbox, OperationKey: "op_" + inbox, FirstReceivedAt: at}
}

// cacheHoldingAClaim is a claim cache with room for 10 claims, each trusted for ttl, that
// holds the claim of event e in scope s by inbox i, first received at now.
func cacheHoldingAClaim(ttl time.Duration, now time.Time) *claimCache {
	c := newClaimCache(10, ttl, DefaultDedupeWindow)
	c.put("s", "e", claimAt("i", now))
	return c
}

func TestClaimCacheRemembersCommittedClaims(t *testing.T) {
	now := time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)
	c := newClaimCache(10, time.Hour, 48*time.Hour)
	if _, ok := c.get("s", "e1", now); ok {
		t.Fatal("empty cache answered")
	}
	c.put("s", "e1", claimAt("i1", now))
	got, ok := c.get("s", "e1", now)
	if !ok || got.InboxID != "i1" || got.OperationKey != "op_i1" || !got.FirstReceivedAt.Equal(now) {
		t.Fatalf("get = %+v, %v; want the claim put", got, ok)
	}
	if got.Accepted {
		t.Error("a remembered claim answered Accepted: whoever asks again is a redelivery")
	}
	// The identity is the pair: the same event id in another scope is another claim.
	if _, ok := c.get("other", "e1", now); ok {
		t.Error("an event id of another scope answered")
	}
	// Trusted until the claim is half the dedupe window old (24 h), not after.
	if _, ok := c.get("s", "e1", now.Add(24*time.Hour-time.Second)); !ok {
		t.Error("a claim younger than half the dedupe window was not trusted")
	}
	if _, ok := c.get("s", "e1", now.Add(24*time.Hour)); ok {
		t.Error("a claim half the dedupe window old was still trusted; the sweep may delete it")
	}
}

func TestClaimCacheFollowsASweepsShorterWindow(t *testing.T) {
	now := time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)
	c := newClaimCache(10, time.Hour, 48*time.Hour)
	c.put("s", "e", claimAt("i", now))
	c.sweptAfter(4 * time.Hour)
	if _, ok := c.get("s", "e", now.Add(2*time.Hour-time.Second)); !ok {
		t.Error("a claim younger than half the sweep's window was not trusted")
	}
	if _, ok := c.get("s", "e", now.Add(2*time.Hour)); ok {
		t.Error("a claim half the sweep's window old was still trusted")
	}
	c.sweptAfter(1000 * time.Hour) // a longer window never loosens the bound
	if _, ok := c.get("s", "e", now.Add(2*time.Hour)); ok {
		t.Error("a longer sweep window loosened the bound")
	}
}

func TestClaimCacheTTL(t *testing.T) {
	const ttl = 30 * time.Millisecond
	now := time.Now()
	c := cacheHoldingAClaim(ttl, now)
	// Fresh only if this goroutine was not held off the CPU for a TTL since the put, as it can
	// be on a loaded machine: then nothing is concluded from the miss.
	if _, ok := c.get("s", "e", now); !ok && time.Since(now) < ttl {
		t.Fatal("fresh entry not found")
	}
	time.Sleep(ttl + 10*time.Millisecond)
	if _, ok := c.get("s", "e", now); ok {
		t.Error("an entry older than the TTL was trusted")
	}
}

func TestClaimCacheIsBounded(t *testing.T) {
	now := time.Now()
	c := newClaimCache(3, time.Hour, DefaultDedupeWindow)
	for i := range 5 {
		c.put("s", fmt.Sprint(i), claimAt(fmt.Sprint(i), now))
		c.put("s", fmt.Sprint(i), claimAt(fmt.Sprint(i), now)) // put twice: still one slot
	}
	if n := c.len(); n != 3 {
		t.Fatalf("%d entries, want the bound of 3", n)
	}
	for i := range 5 {
		_, ok := c.get("s", fmt.Sprint(i), now)
		if want := i >= 2; ok != want {
			t.Errorf("event %d remembered = %v, want %v (the oldest insertions make way)", i, ok, want)
		}
	}
	// Many more than the bound, in a ring: the size never grows.
	for i := range 1000 {
		c.put("s", fmt.Sprint("x", i), claimAt("x", now))
	}
	if n := c.len(); n != 3 {
		t.Fatalf("%d entries after 1000 puts, want 3", n)
	}
}

func TestClaimCacheOff(t *testing.T) {
	for _, c := range []*claimCache{newClaimCache(0, time.Hour, 0), newClaimCache(10, -1, 0), newClaimCache(-1, time.Hour, 0)} {
		if c != nil {
			t.Fatalf("cache %+v, want none", c)
		}
		c.put("s", "e", claimAt("i", time.Now()))
		if _, ok := c.get("s", "e", time.Now()); ok || c.len() != 0 {
			t.Fatal("a nil cache remembered a claim")
		}
	}
}

func TestClaimCacheSilentWhileTheStoreFails(t *testing.T) {
	now := time.Now()
	c := cacheHoldingAClaim(time.Hour, now)
	early := time.Now() // a call in flight when the store fails
	time.Sleep(time.Millisecond)
	c.storeCallEnded(time.Now(), errors.New("connection refused"))
	if _, ok := c.get("s", "e", now); ok {
		t.Fatal("the cache answered after a store failure")
	}
	c.storeCallEnded(early, nil)
	if _, ok := c.get("s", "e", now); ok {
		t.Fatal("a success of a call started before the failure made the cache answer again")
	}
	time.Sleep(time.Millisecond) // so that the next call surely starts after the failure
	c.storeCallEnded(time.Now(), nil)
	if _, ok := c.get("s", "e", now); !ok {
		t.Fatal("a success started after the failure did not make the cache answer again")
	}
}
