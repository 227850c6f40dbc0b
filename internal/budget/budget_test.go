package budget

import (
	"sync"
	"testing"
)

func TestBytes(t *testing.T) {
	b := New(100)
	if !b.Take(60, 0) || !b.Take(40, 0) {
		t.Fatal("takes within the bound refused")
	}
	if b.Take(1, 0) {
		t.Fatal("a take past the bound was granted")
	}
	b.Give(100)
	// Alone, a holder larger than the bound passes, and may grow while it holds everything.
	if !b.Take(150, 0) || !b.Take(10, 150) {
		t.Fatal("a holder larger than the bound was refused while nothing else was held")
	}
	if b.Take(1, 0) {
		t.Fatal("another holder was let in beside one past the bound")
	}
	b.Give(160)

	// Concurrent takes never hold more than the bound together.
	b = New(1000)
	var wg sync.WaitGroup
	var mu sync.Mutex
	held, most := int64(0), int64(0)
	for range 16 {
		wg.Go(func() {
			for range 1000 {
				if b.Take(100, 0) {
					mu.Lock()
					held += 100
					most = max(most, held)
					mu.Unlock()
					mu.Lock()
					held -= 100
					mu.Unlock()
					b.Give(100)
				}
			}
		})
	}
	wg.Wait()
	if most > 1000 {
		t.Fatalf("held %d at once, bound 1000", most)
	}
}
