package server

import (
	"fmt"
	"testing"
	"time"
)

// TestEndpointCacheBounded fills the cache with more distinct ids than it may hold, as callers
// sending random unknown endpoint ids would: it never holds more than its bound, and expired
// entries make room again.
func TestEndpointCacheBounded(t *testing.T) {
	c := newEndpointCache(time.Hour)
	c.max = 100
	live := func() *cachedEndpoint { return &cachedEndpoint{expires: time.Now().Add(time.Hour)} }
	for i := range 1000 {
		c.put(fmt.Sprintf("unknown-%d", i), live(), c.generation)
	}
	if n := len(c.entries); n != c.max {
		t.Fatalf("cache holds %d entries, want its bound %d", n, c.max)
	}
	// Once its entries have expired, a full cache is swept and takes new ones.
	for _, e := range c.entries {
		e.expires = time.Now().Add(-time.Second)
	}
	c.nextSweep = time.Time{}
	c.put("known", live(), c.generation)
	if _, ok := c.entries["known"]; !ok || len(c.entries) != 1 {
		t.Fatalf("after the sweep: %d entries, known cached %v; want only the new entry", len(c.entries), ok)
	}
}
