package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/hookverify/hookverify/client"
	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
)

func runToken(ctx context.Context, e env, args []string) error {
	return subcommand(ctx, e, "token", args, map[string]func(context.Context, env, []string) error{
		"create": tokenCreate,
		"list":   tokenList,
		"revoke": tokenRevoke,
	})
}

// tokenCreate prints the new token once, in the JSON answer's bearerToken; the server keeps
// only its hash.
func tokenCreate(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "token create")
	var r remoteFlags
	r.register(fs)
	name := fs.String("name", "", "who or what holds the token (required)")
	var scopes multiFlag
	fs.Var(&scopes, "scope", "admin, verify:<endpoint|prefix*|*> or inbox:<endpoint|prefix*|*> (repeatable, at least one)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *name == "" || len(scopes) == 0 {
		return usagef("--name and at least one --scope are required")
	}
	return r.call(ctx, e, func(ctx context.Context, c *client.Conn) (proto.Message, error) {
		return c.Tokens.CreateToken(ctx, &hookverifyv1.CreateTokenRequest{Name: *name, Scopes: scopes})
	})
}

func tokenList(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "token list")
	var r remoteFlags
	r.register(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	return r.call(ctx, e, func(ctx context.Context, c *client.Conn) (proto.Message, error) {
		return c.Tokens.ListTokens(ctx, &hookverifyv1.ListTokensRequest{})
	})
}

func tokenRevoke(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "token revoke")
	var r remoteFlags
	r.register(fs)
	id := fs.String("id", "", "token id, as token list shows it, or - to read the id or a leaked token itself from standard input (required)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *id == "" {
		return usagef("--id is required")
	}
	if *id == "-" {
		// A leaked token is what a secret scanner reports; the server revokes the token it is.
		// Read, not taken as an argument, it stays out of process listings and shell history.
		data, err := io.ReadAll(io.LimitReader(e.stdin, 4<<10))
		if err != nil {
			return fmt.Errorf("reading the token id from standard input: %w", err)
		}
		// Trimmed as readToken trims a token: a Windows editor's byte order mark, kept, would
		// make the token match none, and a leaked token stay valid.
		if *id = strings.TrimSpace(strings.TrimPrefix(string(data), "\ufeff")); *id == "" {
			return usagef("--id -: no token id or token on standard input")
		}
	}
	return r.call(ctx, e, func(ctx context.Context, c *client.Conn) (proto.Message, error) {
		return c.Tokens.RevokeToken(ctx, &hookverifyv1.RevokeTokenRequest{Id: *id})
	})
}
