// Package budget counts the bytes a process holds at once against a bound: the Verify requests
// a server holds while their claims wait, the requests an edge holds while it reads and
// forwards them.
package budget

import "sync/atomic"

// Bytes is a bound on bytes held at once. Its methods are safe for concurrent use.
type Bytes struct {
	limit int64
	held  atomic.Int64
}

// New returns a bound of limit bytes.
func New(limit int64) *Bytes { return &Bytes{limit: limit} }

// Limit is the bound.
func (b *Bytes) Limit() int64 { return b.limit }

// Take reserves n more bytes for a holder that holds own already, or reports false (reserving
// nothing) when they would pass the bound. A holder larger than the whole bound is let through
// when nothing else is held, so that a bound below the largest request does not refuse such a
// request whatever else happens.
func (b *Bytes) Take(n, own int64) bool {
	for {
		held := b.held.Load()
		if held > own && held+n > b.limit {
			return false
		}
		if b.held.CompareAndSwap(held, held+n) {
			return true
		}
	}
}

// Give returns n bytes taken before.
func (b *Bytes) Give(n int64) { b.held.Add(-n) }
