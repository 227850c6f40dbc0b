package storagetest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/hookverify/hookverify/storage"
)

// allBytes is every byte value once, so sealed material with NULs, high bytes and invalid
// UTF-8 must survive the store unchanged.
func allBytes() []byte {
	b := make([]byte, 256)
	for i := range b {
		b[i] = byte(255 - i)
	}
	return b
}

func listSecrets(t *testing.T, s storage.Store, endpointID string) []storage.Secret {
	t.Helper()
	got, err := s.ListSecrets(t.Context(), endpointID)
	must(t, err, "ListSecrets "+endpointID)
	return got
}

func testSecrets(t *testing.T, h harness) {
	testSecretChecks(t, h)
	t.Run("add then list returns every field", func(t *testing.T) {
		cases := map[string]func(sec *storage.Secret){
			"typical": func(*storage.Secret) {},
			"binary sealed bytes": func(sec *storage.Secret) {
				sec.Sealed = allBytes()
				sec.KeyID = "kms:projects/p/keys/k#7 ü"
			},
			"no fingerprint": func(sec *storage.Secret) { sec.Fingerprint = "" },
			"every time set": func(sec *storage.Secret) {
				sec.NotBefore = at(time.Minute)
				sec.NotAfter = at(24*time.Hour + time.Microsecond)
				sec.RetiredAt = at(12 * time.Hour)
				sec.LastUsedAt = at(6*time.Hour + 999999*time.Microsecond)
			},
		}
		for name, edit := range cases {
			t.Run(name, func(t *testing.T) {
				s := h.fresh(t)
				createEndpoint(t, s, newEndpoint("ep-1"))
				sec := newSecret("ep-1", "sec-1", at(0))
				edit(&sec)
				addSecret(t, s, sec)
				wantSame(t, []storage.Secret{sec}, listSecrets(t, s, "ep-1"), "listed secrets")
			})
		}
	})

	t.Run("add for unknown endpoint returns ErrNotFound", func(t *testing.T) {
		s := h.fresh(t)
		err := s.AddSecret(t.Context(), newSecret("ep-1", "sec-1", at(0)), nil)
		wantErr(t, err, storage.ErrNotFound, "AddSecret")
		if got := listSecrets(t, s, "ep-1"); len(got) != 0 {
			t.Fatalf("ListSecrets after failed add = %+v, want none", got)
		}
	})

	t.Run("add with a taken id returns ErrAlreadyExists", func(t *testing.T) {
		s := h.fresh(t)
		createEndpoint(t, s, newEndpoint("ep-1"))
		createEndpoint(t, s, newEndpoint("ep-2"))
		first := newSecret("ep-1", "sec-1", at(0))
		addSecret(t, s, first)

		same := newSecret("ep-1", "sec-1", at(time.Hour))
		same.Sealed = []byte("other")
		wantErr(t, s.AddSecret(t.Context(), same, nil), storage.ErrAlreadyExists, "AddSecret on same endpoint")
		// Secret ids are global: another endpoint cannot reuse one either.
		wantErr(t, s.AddSecret(t.Context(), newSecret("ep-2", "sec-1", at(0)), nil), storage.ErrAlreadyExists,
			"AddSecret on another endpoint")

		wantSame(t, []storage.Secret{first}, listSecrets(t, s, "ep-1"), "secrets of ep-1")
		if got := listSecrets(t, s, "ep-2"); len(got) != 0 {
			t.Fatalf("secrets of ep-2 = %+v, want none", got)
		}
	})

	t.Run("list orders by created time then id and includes retired", func(t *testing.T) {
		s := h.fresh(t)
		createEndpoint(t, s, newEndpoint("ep-1"))
		createEndpoint(t, s, newEndpoint("ep-2"))
		late := newSecret("ep-1", "sec-a", at(2*time.Hour))
		tieB := newSecret("ep-1", "sec-c", at(time.Hour))
		tieA := newSecret("ep-1", "sec-b", at(time.Hour))
		early := newSecret("ep-1", "sec-d", at(time.Microsecond))
		early.RetiredAt = at(time.Hour)
		// Only a microsecond apart from tieA: ordering must use full precision.
		justAfter := newSecret("ep-1", "sec-0", at(time.Hour+time.Microsecond))
		for _, sec := range []storage.Secret{late, tieB, tieA, early, justAfter} {
			addSecret(t, s, sec)
		}
		addSecret(t, s, newSecret("ep-2", "sec-x", at(0)))

		want := []storage.Secret{early, tieA, tieB, justAfter, late}
		wantSame(t, want, listSecrets(t, s, "ep-1"), "listed secrets")
	})

	t.Run("list of unknown endpoint or one without secrets is empty", func(t *testing.T) {
		s := h.fresh(t)
		createEndpoint(t, s, newEndpoint("ep-1"))
		for _, id := range []string{"ep-1", "ep-unknown", ""} {
			if got := listSecrets(t, s, id); len(got) != 0 {
				t.Fatalf("ListSecrets(%q) = %+v, want none", id, got)
			}
		}
	})

	t.Run("rotate", func(t *testing.T) { testRotate(t, h) })
	t.Run("retire", func(t *testing.T) { testRetire(t, h) })
	t.Run("usage", func(t *testing.T) { testSecretUsage(t, h) })
	t.Run("reseal", func(t *testing.T) { testReseal(t, h) })

	t.Run("lifecycle through rotation and retirement", func(t *testing.T) {
		s := h.fresh(t)
		createEndpoint(t, s, newEndpoint("ep-1"))
		old := newSecret("ep-1", "sec-old", at(0))
		addSecret(t, s, old)
		valid := func(when time.Time) []string {
			var ids []string
			for _, sec := range listSecrets(t, s, "ep-1") {
				if sec.ValidAt(when) {
					ids = append(ids, sec.ID)
				}
			}
			return ids
		}
		if got, want := valid(at(time.Minute)), []string{"sec-old"}; !slices.Equal(got, want) {
			t.Fatalf("before rotation: valid secrets %v, want %v", got, want)
		}

		now := at(time.Hour)
		grace := now.Add(24 * time.Hour)
		fresh := newSecret("ep-1", "sec-new", now)
		changed, err := s.RotateSecret(t.Context(), fresh, grace, nil)
		must(t, err, "RotateSecret")
		if len(changed) != 1 || changed[0].ID != "sec-old" {
			t.Fatalf("RotateSecret changed %+v, want sec-old only", changed)
		}

		checks := []struct {
			name string
			when time.Time
			want []string
		}{
			{"during grace", now.Add(time.Hour), []string{"sec-old", "sec-new"}},
			{"last microsecond of grace", grace.Add(-time.Microsecond), []string{"sec-old", "sec-new"}},
			{"grace over", grace, []string{"sec-new"}},
		}
		for _, c := range checks {
			if got := valid(c.when); !slices.Equal(got, c.want) {
				t.Fatalf("%s: valid secrets %v, want %v", c.name, got, c.want)
			}
		}

		// Retiring the old secret ends its grace early, and for good: read at a clock that
		// stepped back before the retirement, it stays ended.
		retireAt := now.Add(2 * time.Hour)
		_, err = s.RetireSecret(t.Context(), "ep-1", "sec-old", retireAt)
		must(t, err, "RetireSecret")
		if got, want := valid(retireAt), []string{"sec-new"}; !slices.Equal(got, want) {
			t.Fatalf("at retirement: valid secrets %v, want %v", got, want)
		}
		if got, want := valid(retireAt.Add(-time.Hour)), []string{"sec-new"}; !slices.Equal(got, want) {
			t.Fatalf("at a clock an hour before the retirement: valid secrets %v, want %v", got, want)
		}
	})
}

func testRotate(t *testing.T, h harness) {
	expireAt := at(10 * time.Hour)

	t.Run("expires exactly the secrets the contract names", func(t *testing.T) {
		s := h.fresh(t)
		createEndpoint(t, s, newEndpoint("ep-1"))
		createEndpoint(t, s, newEndpoint("ep-2"))

		open := newSecret("ep-1", "sec-open", at(2*time.Hour))
		later := newSecret("ep-1", "sec-later", at(time.Hour))
		later.NotAfter = expireAt.Add(time.Microsecond)
		earlier := newSecret("ep-1", "sec-earlier", at(0))
		earlier.NotAfter = expireAt.Add(-time.Microsecond)
		equal := newSecret("ep-1", "sec-equal", at(0))
		equal.NotAfter = expireAt
		retired := newSecret("ep-1", "sec-retired", at(0))
		retired.RetiredAt = at(time.Hour)
		retiredLater := newSecret("ep-1", "sec-retired-later", at(0))
		retiredLater.RetiredAt = at(time.Hour)
		retiredLater.NotAfter = expireAt.Add(time.Hour)
		other := newSecret("ep-2", "sec-other", at(0))
		// Scheduled for after the rotation: it was never in force, so rotation leaves it alone.
		scheduled := newSecret("ep-1", "sec-scheduled", at(0))
		scheduled.NotBefore = at(4 * time.Hour)
		// Started before the rotation: in force, so it is ended like the open one.
		started := newSecret("ep-1", "sec-started", at(0))
		started.NotBefore = at(3 * time.Hour)
		for _, sec := range []storage.Secret{open, later, earlier, equal, retired, retiredLater, other, scheduled, started} {
			addSecret(t, s, sec)
		}

		fresh := newSecret("ep-1", "sec-fresh", at(3*time.Hour))
		fresh.Sealed = allBytes()
		changed, err := s.RotateSecret(t.Context(), fresh, expireAt, nil)
		must(t, err, "RotateSecret")

		wantOpen, wantLater, wantStarted := open, later, started
		wantOpen.NotAfter = expireAt
		wantLater.NotAfter = expireAt
		wantStarted.NotAfter = expireAt
		// Oldest first (created_at, then id): sec-started at 0, sec-later, then sec-open.
		wantSame(t, []storage.Secret{wantStarted, wantLater, wantOpen}, changed, "changed secrets")

		all := []storage.Secret{earlier, equal, retired, retiredLater, scheduled, wantStarted, wantLater, wantOpen, fresh}
		wantSame(t, all, listSecrets(t, s, "ep-1"), "secrets of ep-1")
		wantSame(t, []storage.Secret{other}, listSecrets(t, s, "ep-2"), "secrets of ep-2")
	})

	t.Run("first secret changes nothing else", func(t *testing.T) {
		s := h.fresh(t)
		createEndpoint(t, s, newEndpoint("ep-1"))
		createEndpoint(t, s, newEndpoint("ep-2"))
		other := newSecret("ep-2", "sec-other", at(0))
		addSecret(t, s, other)
		fresh := newSecret("ep-1", "sec-1", at(0))
		changed, err := s.RotateSecret(t.Context(), fresh, expireAt, nil)
		must(t, err, "RotateSecret")
		if len(changed) != 0 {
			t.Fatalf("RotateSecret changed %+v, want nothing", changed)
		}
		wantSame(t, []storage.Secret{fresh}, listSecrets(t, s, "ep-1"), "secrets of ep-1")
		wantSame(t, []storage.Secret{other}, listSecrets(t, s, "ep-2"), "secrets of ep-2")
	})

	t.Run("the new secret keeps its own validity window", func(t *testing.T) {
		s := h.fresh(t)
		createEndpoint(t, s, newEndpoint("ep-1"))
		fresh := newSecret("ep-1", "sec-1", at(0))
		fresh.NotBefore = at(time.Hour)
		fresh.NotAfter = expireAt.Add(time.Hour)
		_, err := s.RotateSecret(t.Context(), fresh, expireAt, nil)
		must(t, err, "RotateSecret")
		wantSame(t, []storage.Secret{fresh}, listSecrets(t, s, "ep-1"), "secrets of ep-1")
	})

	t.Run("unknown endpoint returns ErrNotFound", func(t *testing.T) {
		s := h.fresh(t)
		_, err := s.RotateSecret(t.Context(), newSecret("ep-1", "sec-1", at(0)), expireAt, nil)
		wantErr(t, err, storage.ErrNotFound, "RotateSecret")
		if got := listSecrets(t, s, "ep-1"); len(got) != 0 {
			t.Fatalf("ListSecrets after failed rotation = %+v, want none", got)
		}
	})

	t.Run("a taken id returns ErrAlreadyExists and changes nothing", func(t *testing.T) {
		s := h.fresh(t)
		createEndpoint(t, s, newEndpoint("ep-1"))
		first := newSecret("ep-1", "sec-1", at(0))
		second := newSecret("ep-1", "sec-2", at(time.Hour))
		addSecret(t, s, first)
		addSecret(t, s, second)
		_, err := s.RotateSecret(t.Context(), newSecret("ep-1", "sec-1", at(2*time.Hour)), expireAt, nil)
		wantErr(t, err, storage.ErrAlreadyExists, "RotateSecret")
		wantSame(t, []storage.Secret{first, second}, listSecrets(t, s, "ep-1"), "secrets of ep-1")
	})

	// Two scripts rotating one endpoint at once must end as some order of the two would: the
	// last rotation's secret alone without an end, every other one ended, and each rotation
	// recorded once, naming what it ended.
	for _, withOld := range []bool{false, true} {
		t.Run(fmt.Sprintf("concurrent rotations from several handles serialize (earlier secret %t)", withOld), func(t *testing.T) {
			open := h.reopenable(t)
			stores := []storage.Store{open(t), open(t), open(t)}
			createEndpoint(t, stores[0], newEndpoint("ep-1"))
			if withOld {
				addSecret(t, stores[0], newSecret("ep-1", "sec-old", at(0)))
			}
			const n = 6
			changed := make([][]storage.Secret, n)
			errs := make([]error, n)
			race(n, func(i int) {
				ev := auditEvent(fmt.Sprintf("a%02d", i), "secret.rotate", "ep-1", fmt.Sprintf("sec-%02d", i), at(time.Hour))
				changed[i], errs[i] = stores[i%len(stores)].RotateSecret(storage.WithAuditEvent(t.Context(), ev),
					newSecret("ep-1", fmt.Sprintf("sec-%02d", i), at(time.Hour)), expireAt, nil)
			})
			for i, err := range errs {
				must(t, err, fmt.Sprintf("RotateSecret #%d", i))
			}
			var unended []string
			for _, sec := range listSecrets(t, stores[0], "ep-1") {
				if sec.NotAfter.IsZero() {
					unended = append(unended, sec.ID)
				}
			}
			if len(unended) != 1 {
				t.Fatalf("secrets without an end after %d concurrent rotations: %v, want exactly one", n, unended)
			}
			// Every secret but the last one rotated in was ended by exactly one rotation.
			ended := map[string]int{}
			for _, list := range changed {
				for _, sec := range list {
					ended[sec.ID]++
				}
			}
			want := n - 1
			if withOld {
				want++
			}
			if len(ended) != want || ended[unended[0]] != 0 {
				t.Errorf("rotations ended %v, want every secret but %s once", ended, unended[0])
			}
			if events := listAudit(t, stores[0], storage.AuditFilter{EndpointID: "ep-1", Limit: 100}); len(events) != n {
				t.Errorf("%d audit events for %d rotations: %+v", len(events), n, events)
			}
		})
	}
}

func testRetire(t *testing.T, h harness) {
	t.Run("sets the retirement time and returns the stored secret", func(t *testing.T) {
		s := h.fresh(t)
		createEndpoint(t, s, newEndpoint("ep-1"))
		sec := newSecret("ep-1", "sec-1", at(0))
		sec.NotAfter = at(48 * time.Hour)
		sec.LastUsedAt = at(time.Minute)
		addSecret(t, s, sec)
		keep := newSecret("ep-1", "sec-2", at(time.Hour))
		addSecret(t, s, keep)

		when := at(5*time.Hour + 42*time.Microsecond)
		got, err := s.RetireSecret(t.Context(), "ep-1", "sec-1", when)
		must(t, err, "RetireSecret")
		want := sec
		want.RetiredAt = when
		wantSame(t, want, got, "returned secret")
		wantSame(t, []storage.Secret{want, keep}, listSecrets(t, s, "ep-1"), "secrets of ep-1")
	})

	t.Run("is idempotent and keeps the first retirement time", func(t *testing.T) {
		s := h.fresh(t)
		createEndpoint(t, s, newEndpoint("ep-1"))
		sec := newSecret("ep-1", "sec-1", at(0))
		addSecret(t, s, sec)
		first := at(time.Hour)
		_, err := s.RetireSecret(t.Context(), "ep-1", "sec-1", first)
		must(t, err, "first RetireSecret")
		want := sec
		want.RetiredAt = first
		for _, again := range []time.Time{at(2 * time.Hour), at(time.Minute), first} {
			got, err := s.RetireSecret(t.Context(), "ep-1", "sec-1", again)
			must(t, err, "repeated RetireSecret")
			wantSame(t, want, got, "secret after retiring again at "+fmtTime(again))
		}
		wantSame(t, []storage.Secret{want}, listSecrets(t, s, "ep-1"), "secrets of ep-1")
	})

	t.Run("a secret added retired keeps its time", func(t *testing.T) {
		s := h.fresh(t)
		createEndpoint(t, s, newEndpoint("ep-1"))
		sec := newSecret("ep-1", "sec-1", at(0))
		sec.RetiredAt = at(time.Hour)
		addSecret(t, s, sec)
		got, err := s.RetireSecret(t.Context(), "ep-1", "sec-1", at(2*time.Hour))
		must(t, err, "RetireSecret")
		wantSame(t, sec, got, "returned secret")
	})

	t.Run("a zero time is refused and changes nothing", func(t *testing.T) {
		s := h.fresh(t)
		createEndpoint(t, s, newEndpoint("ep-1"))
		sec := newSecret("ep-1", "sec-1", at(0))
		addSecret(t, s, sec)
		_, err := s.RetireSecret(t.Context(), "ep-1", "sec-1", time.Time{})
		wantErr(t, err, storage.ErrInvalid, "RetireSecret at the zero time")
		_, err = s.RotateSecret(t.Context(), newSecret("ep-1", "sec-2", at(time.Hour)), time.Time{}, nil)
		wantErr(t, err, storage.ErrInvalid, "RotateSecret expiring at the zero time")
		wantSame(t, []storage.Secret{sec}, listSecrets(t, s, "ep-1"), "secrets of ep-1")
	})

	t.Run("unknown secret or endpoint returns ErrNotFound", func(t *testing.T) {
		s := h.fresh(t)
		createEndpoint(t, s, newEndpoint("ep-1"))
		addSecret(t, s, newSecret("ep-1", "sec-1", at(0)))
		_, err := s.RetireSecret(t.Context(), "ep-1", "sec-2", at(time.Hour))
		wantErr(t, err, storage.ErrNotFound, "RetireSecret of unknown secret")
		_, err = s.RetireSecret(t.Context(), "ep-2", "sec-1", at(time.Hour))
		wantErr(t, err, storage.ErrNotFound, "RetireSecret on unknown endpoint")
	})

	t.Run("secret of another endpoint returns ErrNotFound and stays", func(t *testing.T) {
		s := h.fresh(t)
		createEndpoint(t, s, newEndpoint("ep-1"))
		createEndpoint(t, s, newEndpoint("ep-2"))
		sec := newSecret("ep-2", "sec-1", at(0))
		addSecret(t, s, sec)
		_, err := s.RetireSecret(t.Context(), "ep-1", "sec-1", at(time.Hour))
		wantErr(t, err, storage.ErrNotFound, "RetireSecret through the wrong endpoint")
		wantSame(t, []storage.Secret{sec}, listSecrets(t, s, "ep-2"), "secrets of ep-2")
	})
}

func testSecretUsage(t *testing.T, h harness) {
	t.Run("last use only moves forward; unknown secrets are ignored", func(t *testing.T) {
		s := h.fresh(t)
		createEndpoint(t, s, newEndpoint("ep-1"))
		createEndpoint(t, s, newEndpoint("ep-2"))
		one, two := newSecret("ep-1", "sec-1", at(0)), newSecret("ep-1", "sec-2", at(time.Second))
		other := newSecret("ep-2", "sec-3", at(0))
		addSecret(t, s, one)
		addSecret(t, s, two)
		addSecret(t, s, other)

		must(t, s.MarkSecretsUsed(t.Context(), nil), "MarkSecretsUsed with nothing")
		must(t, s.MarkSecretsUsed(t.Context(), []storage.SecretUse{
			{EndpointID: "ep-1", SecretID: "sec-1", At: at(time.Minute)},
			{EndpointID: "ep-1", SecretID: "sec-1", At: at(3 * time.Minute)}, // the later use of a batch wins
			{EndpointID: "ep-1", SecretID: "sec-1", At: at(2 * time.Minute)},
			{EndpointID: "ep-2", SecretID: "sec-1", At: at(time.Hour)}, // wrong endpoint
			{EndpointID: "ep-1", SecretID: "sec-9", At: at(time.Hour)}, // unknown
		}), "MarkSecretsUsed")
		one.LastUsedAt = at(3 * time.Minute)
		wantSame(t, []storage.Secret{one, two}, listSecrets(t, s, "ep-1"), "secrets of ep-1")
		wantSame(t, []storage.Secret{other}, listSecrets(t, s, "ep-2"), "secrets of ep-2")

		must(t, s.MarkSecretsUsed(t.Context(), []storage.SecretUse{
			{EndpointID: "ep-1", SecretID: "sec-1", At: at(time.Minute)}, // older: kept as is
			{EndpointID: "ep-1", SecretID: "sec-2", At: at(5*time.Minute + time.Microsecond)},
		}), "second MarkSecretsUsed")
		two.LastUsedAt = at(5*time.Minute + time.Microsecond)
		wantSame(t, []storage.Secret{one, two}, listSecrets(t, s, "ep-1"), "secrets of ep-1 after the second batch")
	})
}

func testReseal(t *testing.T, h harness) {
	t.Run("replaces material and key id only under the expected key", func(t *testing.T) {
		s := h.fresh(t)
		createEndpoint(t, s, newEndpoint("ep-1"))
		sec := newSecret("ep-1", "sec-1", at(0))
		addSecret(t, s, sec)

		done, err := s.ResealSecret(t.Context(), "ep-1", "sec-1", "master-1", "master-2", allBytes())
		must(t, err, "ResealSecret")
		if !done {
			t.Fatal("ResealSecret under the current key reported not done")
		}
		sec.KeyID, sec.Sealed = "master-2", allBytes()
		wantSame(t, []storage.Secret{sec}, listSecrets(t, s, "ep-1"), "resealed secret")

		// A second rekey that read the old key id loses: the material stays as resealed.
		done, err = s.ResealSecret(t.Context(), "ep-1", "sec-1", "master-1", "master-3", []byte("stale"))
		must(t, err, "stale ResealSecret")
		if done {
			t.Fatal("ResealSecret from a key the secret is no longer under reported done")
		}
		wantSame(t, []storage.Secret{sec}, listSecrets(t, s, "ep-1"), "secret after the stale reseal")

		_, err = s.ResealSecret(t.Context(), "ep-2", "sec-1", "master-2", "master-3", []byte("x"))
		wantErr(t, err, storage.ErrNotFound, "ResealSecret of another endpoint's secret")
		_, err = s.ResealSecret(t.Context(), "ep-1", "sec-9", "master-2", "master-3", []byte("x"))
		wantErr(t, err, storage.ErrNotFound, "ResealSecret of an unknown secret")
	})
}
