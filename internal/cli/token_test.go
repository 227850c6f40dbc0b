package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
)

// failingWriter fails every write, as standard output does when it is closed, on a full disk
// or into a broken pipe.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("no space left on device") }

// TestTokenCreateRevokesATokenItCouldNotPrint: a token whose secret was never shown is live
// and nobody holds it; token create revokes it and exits 1 saying so.
func TestTokenCreateRevokesATokenItCouldNotPrint(t *testing.T) {
	addr, _, _ := serverWithToken(t, "first", "verify:acme-*")
	var errOut strings.Builder
	code := Main([]string{"token", "create", "--name", "unseen", "--scope", "verify:acme-*", "--server", addr},
		strings.NewReader(""), failingWriter{}, &errOut)
	if code != 1 {
		t.Errorf("exit %d, want 1; stderr %q", code, errOut.String())
	}
	if !strings.Contains(errOut.String(), "revoked") {
		t.Errorf("stderr %q does not say the token was revoked", errOut.String())
	}
	unseen := tokensNamed(t, addr, "unseen")
	if len(unseen) == 0 {
		t.Fatal("token list has no token named unseen")
	}
	for _, tok := range unseen {
		if tok.RevokedAt == "" {
			t.Errorf("token %s, whose secret was never printed, is still live", tok.ID)
		}
		if !strings.Contains(errOut.String(), tok.ID) {
			t.Errorf("stderr %q does not name token %s", errOut.String(), tok.ID)
		}
	}
}

// unrevokableTokens creates tokens but refuses to revoke them.
type unrevokableTokens struct {
	hookverifyv1.UnimplementedTokenServiceServer
	mu      sync.Mutex
	revokes []string
}

func (u *unrevokableTokens) CreateToken(context.Context, *hookverifyv1.CreateTokenRequest) (*hookverifyv1.CreateTokenResponse, error) {
	return &hookverifyv1.CreateTokenResponse{Token: &hookverifyv1.Token{Id: "tok_unseen"}, BearerToken: "hvt_secret_value"}, nil
}

func (u *unrevokableTokens) RevokeToken(_ context.Context, req *hookverifyv1.RevokeTokenRequest) (*hookverifyv1.RevokeTokenResponse, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.revokes = append(u.revokes, req.GetId())
	return nil, status.Error(codes.Unavailable, "store down")
}

// TestTokenCreateNamesTheTokenToRevokeByHand: when the revoke of an unprinted token fails too,
// the command says which token id to revoke by hand, and never prints the secret to stderr.
func TestTokenCreateNamesTheTokenToRevokeByHand(t *testing.T) {
	u := &unrevokableTokens{}
	remote := serveFake(t, func(g *grpc.Server) { hookverifyv1.RegisterTokenServiceServer(g, u) })
	var errOut strings.Builder
	code := Main(append([]string{"token", "create", "--name", "unseen", "--scope", "admin"}, remote...),
		strings.NewReader(""), failingWriter{}, &errOut)
	if code != 1 {
		t.Errorf("exit %d, want 1; stderr %q", code, errOut.String())
	}
	u.mu.Lock()
	revokes := u.revokes
	u.mu.Unlock()
	if len(revokes) != 1 || revokes[0] != "tok_unseen" {
		t.Errorf("revokes %q, want one of tok_unseen", revokes)
	}
	if !strings.Contains(errOut.String(), "token revoke --id tok_unseen") {
		t.Errorf("stderr %q does not say to revoke tok_unseen by hand", errOut.String())
	}
	if strings.Contains(errOut.String(), "hvt_secret_value") {
		t.Errorf("stderr %q holds the token's secret", errOut.String())
	}
}

// TestTokenCreateBrokenPipeChild runs token create with the process's own standard output, for
// TestTokenCreateRevokesOnABrokenPipe.
func TestTokenCreateBrokenPipeChild(t *testing.T) {
	args := os.Getenv("HOOKVERIFY_REVIEW_TOKEN_CREATE_ARGS")
	if args == "" {
		t.Skip("run by TestTokenCreateRevokesOnABrokenPipe")
	}
	os.Exit(Main(strings.Split(args, "\n"), os.Stdin, os.Stdout, os.Stderr))
}

// TestTokenCreateRevokesOnABrokenPipe: piped into a reader that is gone (token create | head
// -c0, a closed ssh session), Go's runtime killed the process with SIGPIPE in the write, before
// anything could revoke the token nobody saw.
func TestTokenCreateRevokesOnABrokenPipe(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no SIGPIPE")
	}
	addr, _, _ := serverWithToken(t, "first", "verify:acme-*")
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	defer w.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^TestTokenCreateBrokenPipeChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), "HOOKVERIFY_REVIEW_TOKEN_CREATE_ARGS="+strings.Join(
		[]string{"token", "create", "--name", "piped", "--scope", "verify:acme-*", "--server", addr}, "\n"))
	var errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = w, &errOut
	err = cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Errorf("token create into a broken pipe: %v (want exit status 1); stderr %q", err, errOut.String())
	}
	for _, tok := range tokensNamed(t, addr, "piped") {
		if tok.RevokedAt == "" {
			t.Errorf("token %s, printed into a broken pipe, is still live; stderr %q", tok.ID, errOut.String())
		}
	}
}

// listedToken is a token as token list prints it.
type listedToken struct{ ID, Name, RevokedAt string }

// tokensNamed lists the tokens of the server at addr with `token list` and returns those named
// name.
func tokensNamed(t *testing.T, addr, name string) []listedToken {
	t.Helper()
	code, out, stderr := run(t, "", "token", "list", "--server", addr)
	if code != 0 {
		t.Fatalf("token list: exit %d, %q", code, stderr)
	}
	var listed struct{ Tokens []listedToken }
	if err := json.Unmarshal([]byte(out), &listed); err != nil {
		t.Fatalf("token list printed %q (%v)", out, err)
	}
	var named []listedToken
	for _, tok := range listed.Tokens {
		if tok.Name == name {
			named = append(named, tok)
		}
	}
	return named
}

// slowTokens creates the token and then never answers, as a server whose answer is lost.
type slowTokens struct {
	hookverifyv1.UnimplementedTokenServiceServer
	created chan struct{}
}

func (s *slowTokens) CreateToken(ctx context.Context, _ *hookverifyv1.CreateTokenRequest) (*hookverifyv1.CreateTokenResponse, error) {
	close(s.created)
	<-ctx.Done()
	return nil, ctx.Err()
}

// TestTokenCreateTimeoutSaysATokenMayExist: a call that times out may have created the token on
// the server, live with a secret nobody saw; the error says so and how to find and revoke it. A
// refusal, which created nothing, does not.
func TestTokenCreateTimeoutSaysATokenMayExist(t *testing.T) {
	s := &slowTokens{created: make(chan struct{})}
	remote := serveFake(t, func(g *grpc.Server) { hookverifyv1.RegisterTokenServiceServer(g, s) })
	var out, errOut strings.Builder
	code := Main(append([]string{"token", "create", "--name", "ci-deploy", "--scope", "admin", "--timeout", "1s"}, remote...),
		strings.NewReader(""), &out, &errOut)
	select {
	case <-s.created:
	case <-time.After(10 * time.Second):
		t.Fatalf("the server never received the call: exit %d, stderr %q", code, errOut.String())
	}
	if code != 1 || !strings.Contains(errOut.String(), `may still have created a token named "ci-deploy"`) ||
		!strings.Contains(errOut.String(), "token list") {
		t.Errorf("timed out: exit %d, stderr %q; want 1 and a warning that the token may exist", code, errOut.String())
	}

	u := &unrevokableTokens{}
	remote = serveFake(t, func(g *grpc.Server) { hookverifyv1.RegisterTokenServiceServer(g, refusingTokens{u}) })
	errOut.Reset()
	code = Main(append([]string{"token", "create", "--name", "ci-deploy", "--scope", "admin"}, remote...),
		strings.NewReader(""), &out, &errOut)
	if code != 1 || strings.Contains(errOut.String(), "may still have created") {
		t.Errorf("refused: exit %d, stderr %q; want 1 without the warning", code, errOut.String())
	}

	// Nothing listening: the call never reached a server, which created nothing.
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	lis.Close()
	errOut.Reset()
	code = Main([]string{"token", "create", "--name", "ci-deploy", "--scope", "admin", "--server", addr}, strings.NewReader(""), &out, &errOut)
	if code != 1 || strings.Contains(errOut.String(), "may still have created") || !strings.Contains(errOut.String(), "nothing listens") {
		t.Errorf("nothing listening: exit %d, stderr %q; want 1 with the hint that nothing listens, without the warning", code, errOut.String())
	}
}

// refusingTokens refuses every CreateToken as the server does a bad request.
type refusingTokens struct{ *unrevokableTokens }

func (refusingTokens) CreateToken(context.Context, *hookverifyv1.CreateTokenRequest) (*hookverifyv1.CreateTokenResponse, error) {
	return nil, status.Error(codes.InvalidArgument, "name already in use")
}
