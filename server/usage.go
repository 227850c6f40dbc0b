package server

import (
	"context"
	"sync"
	"time"

	"github.com/hookverify/hookverify/storage"
)

// Secret use is recorded in memory per verification and written in batches, so that
// last_used_at costs no database write per delivery.
const (
	// SecretUseResolution is how stale a secret's last_used_at may be: each instance writes a
	// secret's use at most once per this interval.
	SecretUseResolution = time.Minute
	// DefaultSecretUseFlush is how often RunSecretUseWriter writes what was noted.
	DefaultSecretUseFlush = 10 * time.Second
)

type secretKey struct{ endpointID, secretID string }

// secretUses collects the latest use of each secret not yet written.
type secretUses struct {
	mu      sync.Mutex
	pending map[secretKey]time.Time
	// written is the use time last written per secret by this instance.
	written map[secretKey]time.Time
}

func newSecretUses() *secretUses {
	return &secretUses{pending: map[secretKey]time.Time{}, written: map[secretKey]time.Time{}}
}

// note records a use; it is a map lookup unless the secret is due for a write.
func (u *secretUses) note(endpointID, secretID string, at time.Time) {
	k := secretKey{endpointID, secretID}
	u.mu.Lock()
	defer u.mu.Unlock()
	if at.Sub(u.written[k]) < SecretUseResolution {
		return
	}
	if at.After(u.pending[k]) {
		u.pending[k] = at
	}
}

// take returns the pending uses and forgets them.
func (u *secretUses) take() []storage.SecretUse {
	u.mu.Lock()
	defer u.mu.Unlock()
	uses := make([]storage.SecretUse, 0, len(u.pending))
	for k, at := range u.pending {
		uses = append(uses, storage.SecretUse{EndpointID: k.endpointID, SecretID: k.secretID, At: at})
		// Marked written now, so that uses noted while the write runs wait for the next
		// interval; a failed write puts them back.
		u.written[k] = at
	}
	clear(u.pending)
	return uses
}

// putBack returns uses whose write failed to the pending set.
func (u *secretUses) putBack(uses []storage.SecretUse) {
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, use := range uses {
		k := secretKey{use.EndpointID, use.SecretID}
		delete(u.written, k)
		if use.At.After(u.pending[k]) {
			u.pending[k] = use.At
		}
	}
}

// FlushSecretUses writes the secret uses noted since the last flush.
func (s *Server) FlushSecretUses(ctx context.Context) error {
	st, err := s.storage()
	if err != nil {
		return err
	}
	uses := s.uses.take()
	if len(uses) == 0 {
		return nil
	}
	if err := st.MarkSecretsUsed(ctx, uses); err != nil {
		s.uses.putBack(uses)
		return err
	}
	return nil
}

// RunSecretUseWriter flushes secret uses every interval until ctx ends, then once more.
func (s *Server) RunSecretUseWriter(ctx context.Context, every time.Duration) {
	if every <= 0 {
		every = DefaultSecretUseFlush
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			final, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			if err := s.FlushSecretUses(final); err != nil {
				s.log.Warn("could not write secret last-use times at shutdown", "err", err)
			}
			return
		case <-tick.C:
			if err := s.FlushSecretUses(ctx); err != nil && ctx.Err() == nil {
				s.log.Warn("could not write secret last-use times; will retry", "err", err)
			}
		}
	}
}
