package cli

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
)

// unknownAnswerTokens answers CreateToken with UNKNOWN, as a call whose answer was not
// gRPC's does (a proxy's error page): the token may have been created all the same.
type unknownAnswerTokens struct {
	hookverifyv1.UnimplementedTokenServiceServer
}

func (unknownAnswerTokens) CreateToken(context.Context, *hookverifyv1.CreateTokenRequest) (*hookverifyv1.CreateTokenResponse, error) {
	return nil, status.Error(codes.Unknown, "unexpected HTTP status code received from server: 502 (Bad Gateway)")
}

// TestTokenCreateUnknownAnswerSaysATokenMayExist: an answer that was not the server's own
// (UNKNOWN) leaves the outcome open, like a timeout: the error says a token may have been created
// and how to find and revoke it, and prints no secret.
func TestTokenCreateUnknownAnswerSaysATokenMayExist(t *testing.T) {
	remote := serveFake(t, func(g *grpc.Server) { hookverifyv1.RegisterTokenServiceServer(g, unknownAnswerTokens{}) })
	var out, errOut strings.Builder
	code := Main(append([]string{"token", "create", "--name", "ci-deploy", "--scope", "admin"}, remote...),
		strings.NewReader(""), &out, &errOut)
	if code != 1 || !strings.Contains(errOut.String(), `may still have created a token named "ci-deploy"`) ||
		!strings.Contains(errOut.String(), "token revoke") || out.String() != "" {
		t.Errorf("UNKNOWN answer: exit %d, stdout %q, stderr %q; want 1 and a warning that the token may exist", code, out.String(), errOut.String())
	}
}
