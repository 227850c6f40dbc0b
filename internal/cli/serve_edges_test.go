package cli

import (
	"bytes"
	"context"
	"flag"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/hookverify/hookverify/server"
)

// TestServeMaxVerifyBytesFloorIsTheLargestRequest: --max-verify-bytes takes 0 (no limit) and
// any value from the largest request the server takes up; below it serve refuses to start with
// exit 2 naming the flag, since such a request would pass only while nothing else is held.
func TestServeMaxVerifyBytesFloorIsTheLargestRequest(t *testing.T) {
	for _, c := range []struct {
		value int64
		ok    bool
	}{
		{0, true},
		{server.MaxRecvMsgSize, true},
		{server.MaxRecvMsgSize + 1, true},
		{server.MaxRecvMsgSize - 1, false},
		{1, false},
	} {
		var errOut bytes.Buffer
		e := env{stdin: strings.NewReader(""), stdout: &bytes.Buffer{}, stderr: &errOut}
		fs := flag.NewFlagSet("serve", flag.ContinueOnError)
		var sc serveConfig
		sc.register(fs)
		if err := fs.Parse([]string{"--max-verify-bytes", strconv.FormatInt(c.value, 10)}); err != nil {
			t.Fatal(err)
		}
		err := sc.checkRanges(e)
		if c.ok && err != nil {
			t.Errorf("--max-verify-bytes %d refused: %v, %q", c.value, err, errOut.String())
		}
		if !c.ok && (err == nil || !strings.Contains(errOut.String(), "--max-verify-bytes")) {
			t.Errorf("--max-verify-bytes %d: %v, stderr %q; want a usage error naming the flag", c.value, err, errOut.String())
		}
	}
	// A master key file that does not exist: serve, were the flag taken, would stop there (exit
	// 1) rather than run.
	dir := t.TempDir()
	code, out, errOut := run(t, "", "serve", "--data-dir", dir, "--listen", "127.0.0.1:0", "--master-key-file", filepath.Join(dir, "absent.key"), "--max-verify-bytes", "1")
	if code != 2 || out != "" || !strings.Contains(errOut, "--max-verify-bytes") {
		t.Errorf("serve --max-verify-bytes 1: exit %d, stdout %q, stderr %q; want 2 naming the flag", code, out, errOut)
	}
}

// TestShutdownClosesTheHTTPListener: once shutdown returns, the --http-listen port is closed
// too, not only the gRPC one: a server stopped in process (and restarted on the same address)
// leaves no listener answering /healthz behind.
func TestShutdownClosesTheHTTPListener(t *testing.T) {
	r := startReadyServerWithHTTP(t)
	if err := r.shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if conn, err := net.Dial("tcp", r.httpAddr); err == nil {
		conn.Close()
		t.Errorf("the HTTP listener %s still takes connections after shutdown", r.httpAddr)
	}
}
