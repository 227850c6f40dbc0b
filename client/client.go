// Package client connects Go programs (edge services, the hookverify CLI) to a hookverify server.
package client

import (
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
)

// Conn is a connection to a hookverify server with a stub for each service.
type Conn struct {
	conn     *grpc.ClientConn
	Verifier hookverifyv1.VerifierServiceClient
	Admin    hookverifyv1.AdminServiceClient
}

// maxMessageBytes matches the server's receive limit so the largest allowed body can be sent.
const maxMessageBytes = 34 << 20

// Dial connects to addr (host:port). Without options the connection is plaintext, which the
// server only allows on loopback; pass grpc.WithTransportCredentials for TLS.
func Dial(addr string, opts ...grpc.DialOption) (*Conn, error) {
	all := append([]grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallSendMsgSize(maxMessageBytes), grpc.MaxCallRecvMsgSize(maxMessageBytes)),
	}, opts...)
	cc, err := grpc.NewClient(addr, all...)
	if err != nil {
		return nil, fmt.Errorf("client: dialing %s: %w", addr, err)
	}
	return &Conn{
		conn:     cc,
		Verifier: hookverifyv1.NewVerifierServiceClient(cc),
		Admin:    hookverifyv1.NewAdminServiceClient(cc),
	}, nil
}

// GRPC returns the underlying connection (for health checks, say).
func (c *Conn) GRPC() *grpc.ClientConn { return c.conn }

// Close closes the connection.
func (c *Conn) Close() error { return c.conn.Close() }
