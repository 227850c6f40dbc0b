package storage

import "github.com/google/uuid"

// InboxIDSource is implemented by stores that choose the form of the inbox ids the server
// generates for them (Delivery.InboxID). An inbox id is the inbox's primary key, so its form
// decides where each new row lands in that index:
//   - time-ordered ids (UUIDv7) append to the index: a batch of claims dirties a page or two of
//     it. That suits SQLite, which writes every page a commit dirtied to its WAL (time-ordered
//     ids gave 15-48 % more new events per second than random ones, BENCHMARKS.md), and
//     PostgreSQL, which logs a full image of each page first modified after a checkpoint (8-11 %
//     less WAL per delivery with checkpoints during a run; throughput within the noise);
//   - random ids (UUIDv4) spread inserts over the index. That suits CockroachDB, where
//     time-ordered keys would send every insert to the same range.
//
// A store without it gets random ids. A v4 id holds 122 random bits and a v7 id 62 (after the
// millisecond and a sub-millisecond counter), so inbox ids stay unguessable and never collide;
// acting on a leased delivery needs its lease token besides.
type InboxIDSource interface {
	NewInboxID() string
}

// TimeOrderedInboxID returns a UUIDv7: its first 48 bits are the time in milliseconds, and
// ids from one process sort in the order they were made.
func TimeOrderedInboxID() string { return uuid.Must(uuid.NewV7()).String() }

// RandomInboxID returns a UUIDv4.
func RandomInboxID() string { return uuid.NewString() }

// NewInboxID returns an inbox id in the form st prefers (InboxIDSource), random otherwise.
func NewInboxID(st any) string {
	if src, ok := st.(InboxIDSource); ok {
		return src.NewInboxID()
	}
	return RandomInboxID()
}
