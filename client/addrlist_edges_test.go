package client_test

import (
	"testing"

	"github.com/hookverify/hookverify/client"
)

// TestDialRefusesAnotherFamilyOrBracketsInAnIPv4List: an ipv4: list holds IPv4 addresses
// only, unbracketed, with or without a port: an IPv6 address given with a port, or a
// bracketed IPv4 address without one, is refused at once, not dialed as something the list
// does not say (gRPC C-core and grpc-js refuse both).
func TestDialRefusesAnotherFamilyOrBracketsInAnIPv4List(t *testing.T) {
	t.Parallel()
	for _, target := range []string{
		"ipv4:[127.0.0.1]",
		"ipv4:127.0.0.1:7443,[127.0.0.2]",
		"ipv4:[::1]:7443",
		"ipv4:[::ffff:127.0.0.1]:7443",
	} {
		if err := client.CheckTarget(target); err == nil {
			t.Errorf("CheckTarget(%q) accepted", target)
		}
		conn, err := client.Dial(target)
		if err == nil {
			conn.Close()
			t.Errorf("Dial(%q) accepted", target)
		}
	}
}

// TestDialTakesAnIPv6ZoneOfLettersDigitsDotsDashesAndUnderscores: interface names such as
// br_lan or eth0.10 are zones an ipv6: list may name.
func TestDialTakesAnIPv6ZoneOfLettersDigitsDotsDashesAndUnderscores(t *testing.T) {
	t.Parallel()
	for _, target := range []string{
		"ipv6:[fe80::1%25br_lan]:7443",
		"ipv6:[fe80::1%25eth0.10]:7443",
		"ipv6:[fe80::1%25wg-0]:7443",
	} {
		conn, err := client.Dial(target)
		if err != nil {
			t.Errorf("Dial(%q): %v", target, err)
			continue
		}
		conn.Close()
	}
}
