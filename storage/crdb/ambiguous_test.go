package crdb

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"net"
	neturl "net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookverify/hookverify/internal/pgtest"
	"github.com/hookverify/hookverify/storage"
)

// fault is what the proxy does to the next COMMIT.
type fault int32

const (
	noFault fault = iota
	// dropCommit breaks the connection instead of passing the COMMIT on: the server never
	// commits, the client cannot know.
	dropCommit
	// dropReply passes the COMMIT on and breaks the connection before the reply: the server
	// committed, the client cannot know.
	dropReply
)

// faultProxy forwards connections to a PostgreSQL server and breaks the one that sends the
// next COMMIT in the armed way, which is how a commit of unknown outcome looks to a client. A
// COMMIT is either the simple query, which is how pgx ends a transaction, or the Sync that
// ends statements run outside a transaction, their own implicit transaction: a claim batch
// (claimInOneStatement), a lease or a batch of acks on PostgreSQL (inOneTrip).
type faultProxy struct {
	t        *testing.T
	upstream string
	ln       net.Listener
	armed    atomic.Int32
	fired    chan fault

	mu    sync.Mutex
	conns []net.Conn
}

func newFaultProxy(t *testing.T, upstream string) *faultProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &faultProxy{t: t, upstream: upstream, ln: ln, fired: make(chan fault, 1)}
	var wg sync.WaitGroup
	wg.Go(p.serve)
	t.Cleanup(func() {
		_ = ln.Close()
		p.mu.Lock()
		for _, c := range p.conns {
			_ = c.Close()
		}
		p.mu.Unlock()
		wg.Wait()
	})
	return p
}

// url returns rawURL pointed at the proxy.
func (p *faultProxy) url(rawURL string) string {
	u, err := neturl.Parse(rawURL)
	if err != nil {
		p.t.Fatal(err)
	}
	u.Host = p.ln.Addr().String()
	return u.String()
}

// arm sets the fault for the next COMMIT, forgetting any earlier fault that fired unchecked.
func (p *faultProxy) arm(f fault) {
	select {
	case <-p.fired:
	default:
	}
	p.armed.Store(int32(f))
}

// fire records that a fault happened; it never blocks the connection.
func (p *faultProxy) fire(f fault) {
	select {
	case p.fired <- f:
	default:
	}
}

// wantFired fails the test unless the armed fault happened.
func (p *faultProxy) wantFired(t *testing.T, want fault) {
	t.Helper()
	select {
	case got := <-p.fired:
		if got != want {
			t.Fatalf("fault %d happened, want %d", got, want)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the armed fault never happened: no COMMIT went through the proxy")
	}
}

func (p *faultProxy) serve() {
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		server, err := net.Dial("tcp", p.upstream)
		if err != nil {
			_ = client.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, client, server)
		p.mu.Unlock()
		var replyLost atomic.Bool
		closeBoth := func() { _ = client.Close(); _ = server.Close() }
		wg.Go(func() { p.fromClient(client, server, &replyLost, closeBoth) })
		wg.Go(func() { p.fromServer(client, server, &replyLost, closeBoth) })
	}
}

// fromClient forwards the client's protocol messages one by one, so that it can recognise a
// COMMIT sent as a simple query, which is how pgx commits.
func (p *faultProxy) fromClient(client, server net.Conn, replyLost *atomic.Bool, closeBoth func()) {
	defer closeBoth()
	r := bufio.NewReader(client)
	startup := true                      // the startup message has no type byte
	writeStatements := map[string]bool{} // prepared statement name: does it write (see isWrite)
	inTx := false                        // inside BEGIN ... COMMIT/ROLLBACK
	writeBound := false                  // a writing statement was bound since the last Sync
	for {
		var head []byte
		if startup {
			head = make([]byte, 4)
		} else {
			head = make([]byte, 5)
		}
		if _, err := io.ReadFull(r, head); err != nil {
			return
		}
		size := binary.BigEndian.Uint32(head[len(head)-4:])
		if size < 4 {
			return
		}
		msg := make([]byte, len(head)+int(size)-4)
		copy(msg, head)
		if _, err := io.ReadFull(r, msg[len(head):]); err != nil {
			return
		}
		commitPoint := false
		if !startup {
			switch body := msg[5:]; head[0] {
			case 'Q':
				query := strings.ToLower(strings.TrimSpace(strings.TrimRight(string(body), "\x00")))
				commitPoint = query == "commit"
				if strings.HasPrefix(query, "begin") {
					inTx = true
				} else if commitPoint || query == "rollback" {
					inTx = false
				}
			case 'P': // Parse: name, query, ...
				fields := strings.SplitN(string(body), "\x00", 3)
				writeStatements[fields[0]] = len(fields) > 1 && isWrite(fields[1])
			case 'B': // Bind: portal, statement, ...
				fields := strings.SplitN(string(body), "\x00", 3)
				writeBound = writeBound || len(fields) > 1 && writeStatements[fields[1]]
			case 'S': // Sync: outside a transaction, the bound statements commit now
				commitPoint = writeBound && !inTx
				writeBound = false
			}
		}
		if commitPoint {
			switch f := fault(p.armed.Swap(int32(noFault))); f {
			case dropCommit:
				p.fire(f)
				return
			case dropReply:
				replyLost.Store(true)
				p.fire(f)
			}
		}
		startup = false
		if _, err := server.Write(msg); err != nil {
			return
		}
	}
}

// isWrite reports a statement the store runs outside a transaction that writes: a claim
// batch, a lease's or an ack's UPDATE of the inbox.
func isWrite(query string) bool {
	return strings.Contains(query, "INSERT INTO claims") || strings.Contains(query, "UPDATE inbox")
}

// fromServer forwards the server's bytes until a reply is to be lost.
func (p *faultProxy) fromServer(client, server net.Conn, replyLost *atomic.Bool, closeBoth func()) {
	defer closeBoth()
	buf := make([]byte, 32<<10)
	for {
		n, err := server.Read(buf)
		if replyLost.Load() {
			// pgx waits for each reply before sending more, so these bytes answer the
			// COMMIT; the server has committed by now.
			return
		}
		if n > 0 {
			if _, err := client.Write(buf[:n]); err != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func TestCommitOfUnknownOutcome(t *testing.T) {
	t.Parallel()
	s, proxy := storeBehindFaultProxy(t)

	t.Run("claim that committed is reported accepted", func(t *testing.T) {
		d := delivery("evt-1", "inbox-1")
		proxy.arm(dropReply)
		mustClaim(t, s, d, true)
		proxy.wantFired(t, dropReply)
		got, err := s.GetDelivery(t.Context(), d.InboxID)
		if err != nil || got.EventID != d.EventID {
			t.Fatalf("GetDelivery = %+v, %v; want the claimed delivery", got, err)
		}
		mustClaim(t, s, delivery("evt-1", "inbox-2"), false)
	})

	t.Run("claim that did not commit is retried and accepted", func(t *testing.T) {
		proxy.arm(dropCommit)
		mustClaim(t, s, delivery("evt-2", "inbox-3"), true)
		proxy.wantFired(t, dropCommit)
		mustClaim(t, s, delivery("evt-2", "inbox-4"), false)
	})

	t.Run("other writes report the unknown outcome", func(t *testing.T) {
		proxy.arm(dropReply)
		err := s.CreateEndpoint(t.Context(), endpoint("ep-2"))
		proxy.wantFired(t, dropReply)
		if !errors.Is(err, storage.ErrUnavailable) {
			t.Fatalf("CreateEndpoint whose commit reply was lost = %v, want ErrUnavailable", err)
		}
		// It did commit: ErrUnavailable promises only that nothing was reported done.
		if _, err := s.GetEndpoint(t.Context(), "ep-2"); err != nil {
			t.Fatalf("GetEndpoint after the lost reply: %v", err)
		}
	})

	// An ack whose commit's outcome is unknown is reported unavailable, never done or lost:
	// the worker acks again, and learns then whether the first one went through.
	for _, c := range []struct {
		name   string
		fault  fault
		token  string
		second error // what the second ack gets
	}{
		{"ack whose reply was lost reports the unknown outcome, and acked", dropReply, "tok-a", storage.ErrLeaseLost},
		{"ack that never reached the server reports the unknown outcome, and did not ack", dropCommit, "tok-b", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			leased := leaseOne(t, s, c.token)
			proxy.arm(c.fault)
			err := s.Ack(t.Context(), leased.InboxID, c.token, base.Add(time.Minute))
			proxy.wantFired(t, c.fault)
			if !errors.Is(err, storage.ErrUnavailable) {
				t.Fatalf("Ack = %v, want ErrUnavailable", err)
			}
			err = s.Ack(t.Context(), leased.InboxID, c.token, base.Add(time.Minute))
			if (c.second == nil) != (err == nil) || !errors.Is(err, c.second) {
				t.Fatalf("Ack again = %v, want %v", err, c.second)
			}
		})
	}

	wantCount(t, s, 2)
}

// leaseOne leases the oldest delivery of s under token, at base + 1 minute, for an hour.
func leaseOne(t *testing.T, s *Store, token string) storage.LeasedDelivery {
	t.Helper()
	res, err := s.Lease(t.Context(), storage.LeaseRequest{Max: 1, Visibility: time.Hour, MaxAttempts: 5,
		LeaseToken: token, Now: base.Add(time.Minute)})
	if err != nil || len(res.Deliveries) != 1 {
		t.Fatalf("Lease %s = %+v, %v; want one delivery", token, res, err)
	}
	return res.Deliveries[0]
}

// storeBehindFaultProxy opens a store on a fresh database through a fault proxy, with
// endpoint ep-1.
func storeBehindFaultProxy(t *testing.T) (*Store, *faultProxy) {
	t.Helper()
	url := pgtest.Shared(t).NewDatabase(t)
	u, err := neturl.Parse(url)
	if err != nil {
		t.Fatal(err)
	}
	proxy := newFaultProxy(t, u.Host)
	s := open(t, proxy.url(url))
	if err := s.CreateEndpoint(t.Context(), endpoint("ep-1")); err != nil {
		t.Fatal(err)
	}
	return s, proxy
}

// TestDeadLetterExhaustedOfUnknownOutcome: a DeadLetterExhausted whose reply is lost after
// PostgreSQL committed it was run again as if nothing had been sent, moved a second batch and
// reported only that one: the count (and the server's dead-lettered metric) missed the first.
// An outcome the store cannot know is ErrUnavailable, as for Requeue.
func TestDeadLetterExhaustedOfUnknownOutcome(t *testing.T) {
	t.Parallel()
	s, proxy := storeBehindFaultProxy(t)
	for _, d := range []storage.Delivery{delivery("evt-1", "inbox-1"), delivery("evt-2", "inbox-2")} {
		mustClaim(t, s, d, true)
		leased := leaseOne(t, s, "tok-"+d.InboxID)
		if _, err := s.Nack(t.Context(), leased.InboxID, "tok-"+d.InboxID, base.Add(time.Hour), 5, "boom", base.Add(time.Minute)); err != nil {
			t.Fatalf("Nack: %v", err)
		}
	}
	proxy.arm(dropReply)
	n, err := s.DeadLetterExhausted(t.Context(), storage.ExhaustedRequest{MaxAttempts: 1, Reason: "lowered", Batch: 1, Now: base.Add(2 * time.Minute)})
	proxy.wantFired(t, dropReply)
	stats, statsErr := s.InboxStats(t.Context())
	if statsErr != nil || len(stats) != 1 {
		t.Fatalf("InboxStats = %+v, %v", stats, statsErr)
	}
	if err == nil && n != stats[0].Dead {
		t.Fatalf("DeadLetterExhausted whose reply was lost = %d, nil; but %d moved to dead", n, stats[0].Dead)
	}
	if err != nil && !errors.Is(err, storage.ErrUnavailable) {
		t.Fatalf("DeadLetterExhausted whose reply was lost = %v, want ErrUnavailable", err)
	}
}
