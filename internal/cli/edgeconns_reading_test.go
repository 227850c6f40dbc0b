package cli

import (
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"testing"
	"time"
)

// TestConnectionLimitSparesAConnectionReadingItsNextRequest: net/http reports a keep-alive
// connection idle until it has read the whole header section of its next request (it marks it
// active only then), so a connection whose next request had begun to arrive, headers split over
// a few packets say, was still taken as idle and closed at the limit, its request cut. Bytes
// read from an idle HTTP/1 connection start its idleness again.
func TestConnectionLimitSparesAConnectionReadingItsNextRequest(t *testing.T) {
	l, _, addr := newTestLimit(t, 2, func() {})
	l.grace = 300 * time.Millisecond
	var served, clients [2]net.Conn
	for i := range served {
		clients[i], served[i] = dialAccepted(t, l, addr)
	}
	l.trackState(served[0], http.StateIdle)
	time.Sleep(2 * time.Millisecond)
	l.trackState(served[1], http.StateIdle)
	time.Sleep(l.grace + 100*time.Millisecond)
	// The first, idle the longest, receives the start of its next request, read by net/http
	// (its Peek before the header section).
	if _, err := clients[0].Write([]byte("POST /hooks/x HTTP/1.1\r\nHost: x\r\n")); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(served[0], make([]byte, 4)); err != nil {
		t.Fatal(err)
	}
	dialAccepted(t, l, addr)
	// Read by the clients: a closed connection reads EOF (or a reset, when it closed with
	// bytes unread) at once, an open one times out.
	closed := func(i int) bool {
		clients[i].SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		_, err := clients[i].Read(make([]byte, 1))
		return err != nil && !errors.Is(err, os.ErrDeadlineExceeded)
	}
	if closed(0) {
		t.Error("the connection reading its next request was closed for a new one")
	}
	if !closed(1) {
		t.Error("the connection idle, sending nothing, was not closed for the new one")
	}
}
