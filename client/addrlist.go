package client

import (
	"fmt"
	"net/netip"
	"net/url"
	"strings"

	"google.golang.org/grpc/resolver"
)

// defaultListPort is the port of an address-list entry that names none, as gRPC's naming
// document specifies for ipv4: and ipv6: targets.
const defaultListPort = 443

// addressList is a target of gRPC's ipv4: or ipv6: scheme ("ipv4:10.0.0.1:7443,10.0.0.2:7443",
// "ipv6:[2001:db8::1]:7443"), https://github.com/grpc/grpc/blob/master/doc/naming.md. grpc-go,
// unlike gRPC C-core and grpc-js (the Node edge), has no resolver for them: it takes the whole
// list for a DNS name, and every call fails.
type addressList struct {
	scheme string
	addrs  []netip.AddrPort
}

// CheckTarget returns the error Dial would give at once for target's form: a malformed ipv4:
// or ipv6: address list. Any other target is left to gRPC. A command line checks its flags
// with it before dialing, to tell a mistyped address from a failed connection.
func CheckTarget(target string) error {
	_, err := parseAddressList(target)
	return err
}

// parseAddressList parses target if its scheme is ipv4 or ipv6, and returns nil for any other
// target. It is strict, so that Dial refuses at once a list gRPC could never connect to: an
// empty list or entry, a host name, an address of the other family, a missing, zero or
// malformed port, a URI authority, query or fragment. An IPv6 zone is written %25zone, as the
// URI form requires (RFC 6874), and holds only letters, digits, '.', '-' and '_'.
func parseAddressList(target string) (*addressList, error) {
	scheme, rest, ok := strings.Cut(target, ":")
	if !ok {
		return nil, nil
	}
	scheme = strings.ToLower(scheme) // URI schemes are case-insensitive, as for gRPC's lookup
	if scheme != "ipv4" && scheme != "ipv6" {
		return nil, nil
	}
	fail := func(format string, args ...any) error {
		return fmt.Errorf("client: %s target: "+format, append([]any{scheme}, args...)...)
	}
	if strings.HasPrefix(rest, "//") {
		var found bool
		if rest, found = strings.CutPrefix(rest, "///"); !found {
			return nil, fail("an address list takes no authority: write %s:a,b or %s:///a,b", scheme, scheme)
		}
	}
	// The list is a URI path: percent-decode it, as gRPC C-core does.
	list, err := url.PathUnescape(rest)
	if err != nil {
		return nil, fail("bad percent-encoding (an IPv6 zone's %% is written %%25): %v", err)
	}
	if list == "" {
		return nil, fail("empty address list")
	}
	l := &addressList{scheme: scheme}
	for entry := range strings.SplitSeq(list, ",") {
		ap, err := parseListEntry(scheme, entry)
		if err != nil {
			return nil, fail("%q: %v", entry, err)
		}
		l.addrs = append(l.addrs, ap)
	}
	return l, nil
}

// parseListEntry parses one entry of an address list: for ipv4 address[:port], for ipv6
// address, [address] or [address]:port.
func parseListEntry(scheme, entry string) (netip.AddrPort, error) {
	if entry == "" {
		return netip.AddrPort{}, fmt.Errorf("empty entry")
	}
	var ap netip.AddrPort
	var err error
	switch {
	case scheme == "ipv4" && strings.Contains(entry, ":"), scheme == "ipv6" && strings.HasPrefix(entry, "[") && !strings.HasSuffix(entry, "]"):
		ap, err = netip.ParseAddrPort(entry)
		if err == nil && ap.Port() == 0 {
			err = fmt.Errorf("port 0")
		}
	default:
		bare := entry
		if strings.HasPrefix(entry, "[") && strings.HasSuffix(entry, "]") {
			if scheme == "ipv4" {
				return netip.AddrPort{}, fmt.Errorf("brackets around an IPv4 address")
			}
			bare = entry[1 : len(entry)-1]
		}
		var addr netip.Addr
		addr, err = netip.ParseAddr(bare)
		ap = netip.AddrPortFrom(addr, defaultListPort)
	}
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("not an address of the list (for a host name, give a DNS target): %v", err)
	}
	addr := ap.Addr()
	if scheme == "ipv4" && !addr.Is4() {
		return netip.AddrPort{}, fmt.Errorf("not an IPv4 address")
	}
	if scheme == "ipv6" && !addr.Is6() {
		return netip.AddrPort{}, fmt.Errorf("not an IPv6 address")
	}
	// A zone goes into the address gRPC dials, where a bracket, comma or space would make
	// another address of it or none; interface names and numbers need none of them.
	if zone := addr.Zone(); strings.ContainsFunc(zone, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' || r == '_')
	}) {
		return netip.AddrPort{}, fmt.Errorf("a zone of letters, digits, '.', '-' or '_' only")
	}
	return ap, nil
}

// allLoopback reports whether every address of the list is loopback.
func (l *addressList) allLoopback() bool {
	for _, ap := range l.addrs {
		if !ap.Addr().IsLoopback() {
			return false
		}
	}
	return true
}

// builder is a resolver for this list alone, given to the connection with grpc.WithResolvers,
// so that nothing changes for other gRPC users in the process (resolver.Register is global).
// Each address becomes an endpoint, balanced as a DNS name's addresses are.
//
// Over TLS, each address is verified as itself (its ServerName), as if dialed alone: a list
// names no service, and gRPC's default authority for it would be the whole list (C-core), or
// its first address for every instance (grpc-js), so that no certificate of a second instance
// matched. perAddressName is false when the TLS configuration names the server (WithTLS with
// a ServerName): that name then wins for every address, as grpc-go's WithAuthority does anyway.
func (l *addressList) builder(perAddressName bool) resolver.Builder {
	state := resolver.State{}
	for _, ap := range l.addrs {
		addr := resolver.Address{Addr: ap.String()}
		if perAddressName {
			// Without the zone, which names the local interface, not the server: a certificate
			// names the bare address, which crypto/x509 would not match with a zone.
			addr.ServerName = netip.AddrPortFrom(ap.Addr().WithZone(""), ap.Port()).String()
		}
		state.Addresses = append(state.Addresses, addr)
		state.Endpoints = append(state.Endpoints, resolver.Endpoint{Addresses: []resolver.Address{addr}})
	}
	return &listBuilder{scheme: l.scheme, state: state}
}

type listBuilder struct {
	scheme string
	state  resolver.State
}

func (b *listBuilder) Scheme() string { return b.scheme }

// Build reports the fixed list once; gRPC's target is not read again, since Dial parsed it.
func (b *listBuilder) Build(_ resolver.Target, cc resolver.ClientConn, _ resolver.BuildOptions) (resolver.Resolver, error) {
	// An error means the balancer refused the state; a fixed list has no other to offer.
	_ = cc.UpdateState(b.state)
	return listResolver{}, nil
}

// listResolver has nothing to resolve again: the list is fixed.
type listResolver struct{}

func (listResolver) ResolveNow(resolver.ResolveNowOptions) {}
func (listResolver) Close()                                {}
