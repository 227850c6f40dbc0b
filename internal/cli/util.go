package cli

import (
	"sort"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/hookverify/hookverify/client"
)

func sortedStrings(s []string) []string {
	sort.Strings(s)
	return s
}

func parseOptionalTime(flagName, value string) (*timestamppb.Timestamp, error) {
	if value == "" {
		return nil, nil
	}
	t, err := time.Parse(time.RFC3339, value)
	if err != nil {
		return nil, usagef("%s: want an RFC 3339 time such as 2026-12-31T23:59:00Z: %v", flagName, err)
	}
	return timestamppb.New(t), nil
}

// checkAddress refuses, as a usage error, a gRPC address given as a URL (http://host:port):
// gRPC would take it for a DNS name, or refuse it as an "invalid target address" only when the
// first call fails (for the edge, as a 503 to every delivery); the scheme does not choose TLS
// either, tlsFlag does. So is a malformed ipv4:/ipv6: address list (client.CheckTarget).
func checkAddress(flag, addr, tlsFlag string) error {
	if lower := strings.ToLower(addr); strings.HasPrefix(lower, "http://") || strings.HasPrefix(lower, "https://") {
		return usagef("%s %s: want the gRPC address host:port (serve's --listen, e.g. 127.0.0.1:7700), not a URL; TLS is chosen with %s", flag, addr, tlsFlag)
	}
	if err := client.CheckTarget(addr); err != nil {
		return usagef("%s: %v", flag, err)
	}
	return nil
}
