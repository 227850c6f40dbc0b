package server

import (
	"context"
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
	unknown := func(context.Context) (*cachedEndpoint, error) { return &cachedEndpoint{}, nil }
	for i := range 1000 {
		if _, err := c.get(t.Context(), fmt.Sprintf("unknown-%d", i), unknown); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(c.entries); n != c.max {
		t.Fatalf("cache holds %d entries, want its bound %d", n, c.max)
	}
	// Once its entries have expired, a full cache is swept and takes new ones.
	for _, e := range c.entries {
		e.expires = time.Now().Add(-time.Second)
	}
	c.nextSweep = time.Time{}
	if _, err := c.get(t.Context(), "known", unknown); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.entries["known"]; !ok || len(c.entries) != 1 {
		t.Fatalf("after the sweep: %d entries, known cached %v; want only the new entry", len(c.entries), ok)
	}
}

func TestMonitorPause(t *testing.T) {
	for _, c := range []struct{ interval, took, want time.Duration }{
		{time.Second, 10 * time.Millisecond, 990 * time.Millisecond}, // a small inbox: every second
		{time.Second, 50 * time.Millisecond, 950 * time.Millisecond},
		{time.Second, 100 * time.Millisecond, 1900 * time.Millisecond}, // 100 ms scans: one in 2 s
		{time.Second, 2 * time.Second, 38 * time.Second},
	} {
		if got := monitorPause(c.interval, c.took); got != c.want {
			t.Errorf("monitorPause(%v, %v) = %v, want %v", c.interval, c.took, got, c.want)
		}
	}
}
