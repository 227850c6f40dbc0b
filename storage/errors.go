package storage

import (
	"errors"
	"fmt"
)

// Sentinel errors every backend returns (wrapped) so callers can decide with errors.Is.
var (
	// ErrNotFound: the requested row does not exist.
	ErrNotFound = errors.New("storage: not found")
	// ErrAlreadyExists: a row with the same key exists.
	ErrAlreadyExists = errors.New("storage: already exists")
	// ErrInvalid: the argument breaks the contract (a required field is empty, say).
	ErrInvalid = errors.New("storage: invalid argument")
	// ErrUnavailable: the database could not be reached or a transaction did not commit.
	// The operation may be retried; nothing was reported as done.
	ErrUnavailable = errors.New("storage: unavailable")
	// ErrLeaseLost: the delivery is no longer leased under the given token (the lease expired
	// and another worker may hold it, or it was already acked).
	ErrLeaseLost = errors.New("storage: lease lost")
	// ErrAlreadyAcked: the lease is gone because the delivery was acked, by an earlier call
	// on this lease whose answer was lost, or by another worker after this lease ended. It
	// wraps ErrLeaseLost; unlike a lease lost otherwise, the delivery's work is done.
	ErrAlreadyAcked = fmt.Errorf("%w: the delivery was already acked", ErrLeaseLost)
	// ErrUnreadable: a stored record cannot be read back (its encoded headers are corrupt,
	// say, or written by a release that encodes them differently).
	ErrUnreadable = errors.New("storage: stored record cannot be read")
	// ErrClosed: the store was closed.
	ErrClosed = errors.New("storage: closed")
)
