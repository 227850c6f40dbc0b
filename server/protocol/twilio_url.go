package protocol

import (
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// twilio-node 6.3.1 (lib/webhooks/webhooks.js, validateRequest) falls back, when the URL as
// received (with its port removed or the default port added) does not verify, to the URL as
// `new URL(url).toString()` serialises it, with and without the port, and to each of those
// with its query re-encoded by Node's legacy querystring module, "for back ends that signed an
// escaped form of a query value (e.g. `%27` for `'`)". The functions here reproduce Node 20's
// results for absolute http(s) URLs; what they do not reproduce exactly (a non-ASCII or
// Punycode host, an IPv4 address not in dotted-decimal form, invalid UTF-8) they refuse, so
// that no candidate is ever guessed.

// twilioNormalizeURL returns `new URL(raw).toString()` as Node 20 (ada 2.9) gives it for an
// absolute http or https URL, following the WHATWG URL Standard's basic URL parser for
// special schemes, or false when raw is not such a URL or holds something it does not
// reproduce exactly.
func twilioNormalizeURL(raw string) (string, bool) {
	if !utf8.ValidString(raw) {
		// A JavaScript string has no invalid UTF-8; how the edge would have decoded it is unknown.
		return "", false
	}
	// Leading and trailing C0 controls and spaces are stripped, and every tab and newline
	// removed, before parsing.
	s := strings.TrimFunc(raw, func(r rune) bool { return r <= 0x20 })
	if strings.ContainsAny(s, "\t\n\r") {
		s = strings.NewReplacer("\t", "", "\n", "", "\r", "").Replace(s)
	}
	colon := strings.IndexByte(s, ':')
	if colon < 0 {
		return "", false
	}
	scheme := s[:colon]
	for i := 0; i < len(scheme); i++ {
		if scheme[i] >= 0x80 {
			return "", false
		}
	}
	scheme = strings.ToLower(scheme)
	defaultPort := ""
	switch scheme {
	case "https":
		defaultPort = "443"
	case "http":
		defaultPort = "80"
	default:
		return "", false
	}
	// Special authority (ignore) slashes: any run of slashes and backslashes, even none.
	rest := strings.TrimLeft(s[colon+1:], `/\`)

	// Authority: up to the first of / ? # \; userinfo ends at its last @.
	end := strings.IndexAny(rest, `/?#\`)
	if end < 0 {
		end = len(rest)
	}
	authority, rest := rest[:end], rest[end:]
	userinfo := ""
	if at := strings.LastIndexByte(authority, '@'); at >= 0 {
		userinfo = twilioUserinfo(authority[:at])
		authority = authority[at+1:]
	}

	// Host, then port: a colon outside brackets ends the host.
	hostEnd := len(authority)
	inBrackets := false
	for i := 0; i < len(authority); i++ {
		if c := authority[i]; c == '[' {
			inBrackets = true
		} else if c == ']' {
			inBrackets = false
		} else if c == ':' && !inBrackets {
			hostEnd = i
			break
		}
	}
	if hostEnd == 0 {
		return "", false
	}
	host, ok := twilioHost(authority[:hostEnd])
	if !ok {
		return "", false
	}
	port := ""
	if hostEnd < len(authority) {
		digits := authority[hostEnd+1:]
		n := 0
		for i := 0; i < len(digits); i++ {
			if digits[i] < '0' || digits[i] > '9' {
				return "", false
			}
			if n = n*10 + int(digits[i]-'0'); n > 65535 {
				return "", false
			}
		}
		if digits != "" {
			port = strconv.Itoa(n)
		}
		if port == defaultPort {
			port = ""
		}
	}

	// Path, up to ? or #.
	pathEnd := strings.IndexAny(rest, "?#")
	if pathEnd < 0 {
		pathEnd = len(rest)
	}
	path, rest := twilioPath(rest[:pathEnd]), rest[pathEnd:]

	var b strings.Builder
	b.WriteString(scheme)
	b.WriteString("://")
	b.WriteString(userinfo)
	b.WriteString(host)
	if port != "" {
		b.WriteByte(':')
		b.WriteString(port)
	}
	b.WriteString(path)
	if strings.HasPrefix(rest, "?") {
		query := rest[1:]
		fragment, hasFragment := "", false
		if f := strings.IndexByte(query, '#'); f >= 0 {
			query, fragment, hasFragment = query[:f], query[f+1:], true
		}
		b.WriteByte('?')
		twilioPercentEncode(&b, query, twilioInSpecialQuerySet)
		if hasFragment {
			b.WriteByte('#')
			twilioPercentEncode(&b, fragment, twilioInFragmentSet)
		}
	} else if strings.HasPrefix(rest, "#") {
		b.WriteByte('#')
		twilioPercentEncode(&b, rest[1:], twilioInFragmentSet)
	}
	return b.String(), true
}

// The WHATWG percent-encode sets, for one byte of a code point's UTF-8 encoding: every byte
// of a non-ASCII code point is >= 0x80 and is encoded in all of them.
func twilioInC0ControlSet(c byte) bool { return c < 0x20 || c > 0x7E }

func twilioInFragmentSet(c byte) bool {
	return twilioInC0ControlSet(c) || strings.IndexByte(" \"<>`", c) >= 0
}

func twilioInSpecialQuerySet(c byte) bool {
	return twilioInC0ControlSet(c) || strings.IndexByte(" \"#<>'", c) >= 0
}

// twilioInPathSet is the path percent-encode set as Node 20 applies it: the query set and
// ? ` { } (not ^, which later revisions of the standard added).
func twilioInPathSet(c byte) bool {
	return twilioInC0ControlSet(c) || strings.IndexByte(" \"#<>?`{}", c) >= 0
}

func twilioInUserinfoSet(c byte) bool {
	return twilioInPathSet(c) || strings.IndexByte("/:;=@[\\]^|", c) >= 0
}

// twilioPercentEncode writes s with every byte in the set as %XX (upper-case hex); an existing
// % is kept as it is.
func twilioPercentEncode(b *strings.Builder, s string, inSet func(byte) bool) {
	const hexDigits = "0123456789ABCDEF"
	for i := 0; i < len(s); i++ {
		if c := s[i]; inSet(c) {
			b.WriteByte('%')
			b.WriteByte(hexDigits[c>>4])
			b.WriteByte(hexDigits[c&0xF])
		} else {
			b.WriteByte(c)
		}
	}
}

// twilioUserinfo serialises the userinfo before the last @: the first : splits the username
// from the password, an earlier @ is encoded as %40, and "user:@" and ":@" lose what is empty.
func twilioUserinfo(s string) string {
	user, pass, _ := strings.Cut(s, ":")
	var b strings.Builder
	twilioPercentEncode(&b, user, twilioInUserinfoSet)
	if pass != "" {
		b.WriteByte(':')
		twilioPercentEncode(&b, pass, twilioInUserinfoSet)
	}
	if b.Len() == 0 {
		return ""
	}
	b.WriteByte('@')
	return b.String()
}

// twilioPath serialises a special URL's path: backslashes are slashes, "." and ".." segments
// (also as %2e, in any case) resolved, the path percent-encode set encoded; empty is "/".
func twilioPath(p string) string {
	if p == "" {
		return "/"
	}
	// p starts with / or \ here (the authority ended at one of them); the path start state
	// consumes it.
	segments := strings.Split(strings.ReplaceAll(p[1:], `\`, "/"), "/")
	var out []string
	for i, seg := range segments {
		last := i == len(segments)-1
		switch lower := strings.ToLower(seg); lower {
		case "..", ".%2e", "%2e.", "%2e%2e":
			if len(out) > 0 {
				out = out[:len(out)-1]
			}
			if last {
				out = append(out, "")
			}
		case ".", "%2e":
			if last {
				out = append(out, "")
			}
		default:
			var b strings.Builder
			twilioPercentEncode(&b, seg, twilioInPathSet)
			out = append(out, b.String())
		}
	}
	return "/" + strings.Join(out, "/")
}

// twilioHost parses a special URL's host as the WHATWG host parser does and returns its
// serialisation, or false for a host it rejects or that is not reproduced exactly here.
func twilioHost(h string) (string, bool) {
	if strings.HasPrefix(h, "[") {
		if !strings.HasSuffix(h, "]") || len(h) < 2 {
			return "", false
		}
		return twilioIPv6(h[1 : len(h)-1])
	}
	raw := twilioPercentDecode(h)
	var b strings.Builder
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if c >= 0x80 {
			// Non-ASCII: IDNA (UTS #46) mapping and Punycode, not reproduced here.
			return "", false
		}
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		// Forbidden domain code points.
		if c <= 0x20 || c == 0x7F || strings.IndexByte("#%/:<>?@[\\]^|", c) >= 0 {
			return "", false
		}
		b.WriteByte(c)
	}
	domain := b.String()
	if domain == "" {
		return "", false
	}
	labels := strings.Split(domain, ".")
	for _, l := range labels {
		if strings.HasPrefix(l, "xn--") {
			// A Punycode label is decoded and validated by IDNA, not reproduced here.
			return "", false
		}
	}
	if twilioEndsInNumber(labels) {
		// An IPv4 address: only the dotted-decimal form serialises as itself; the others
		// (hex, octal, fewer parts, a trailing dot) are not reproduced here.
		if len(labels) != 4 {
			return "", false
		}
		for _, l := range labels {
			n, err := strconv.Atoi(l)
			if err != nil || n > 255 || strconv.Itoa(n) != l {
				return "", false
			}
		}
	}
	return domain, true
}

// twilioEndsInNumber is the WHATWG "ends in a number checker" over a domain's labels.
func twilioEndsInNumber(labels []string) bool {
	if labels[len(labels)-1] == "" {
		if len(labels) == 1 {
			return false
		}
		labels = labels[:len(labels)-1]
	}
	last := labels[len(labels)-1]
	if last != "" && strings.Trim(last, "0123456789") == "" {
		return true
	}
	if len(last) >= 2 && last[0] == '0' && (last[1] == 'x' || last[1] == 'X') {
		return strings.Trim(last[2:], "0123456789abcdefABCDEF") == ""
	}
	return false
}

// twilioIPv6 parses an IPv6 address as the WHATWG IPv6 parser does and serialises it (lower-case
// hex, the first longest run of two or more zero pieces compressed).
func twilioIPv6(s string) (string, bool) {
	var addr [8]uint16
	piece, compress, p := 0, -1, 0
	at := func(i int) int {
		if i < len(s) {
			return int(s[i])
		}
		return -1
	}
	hexVal := func(c int) int {
		switch {
		case '0' <= c && c <= '9':
			return c - '0'
		case 'a' <= c && c <= 'f':
			return c - 'a' + 10
		case 'A' <= c && c <= 'F':
			return c - 'A' + 10
		}
		return -1
	}
	if at(p) == ':' {
		if at(p+1) != ':' {
			return "", false
		}
		p += 2
		piece++
		compress = piece
	}
	for at(p) != -1 {
		if piece == 8 {
			return "", false
		}
		if at(p) == ':' {
			if compress != -1 {
				return "", false
			}
			p++
			piece++
			compress = piece
			continue
		}
		value, length := 0, 0
		for length < 4 && hexVal(at(p)) >= 0 {
			value = value*16 + hexVal(at(p))
			p++
			length++
		}
		if at(p) == '.' {
			if length == 0 {
				return "", false
			}
			p -= length
			if piece > 6 {
				return "", false
			}
			seen := 0
			for at(p) != -1 {
				v := -1
				if seen > 0 {
					if at(p) == '.' && seen < 4 {
						p++
					} else {
						return "", false
					}
				}
				if c := at(p); c < '0' || c > '9' {
					return "", false
				}
				for c := at(p); '0' <= c && c <= '9'; c = at(p) {
					n := c - '0'
					switch v {
					case -1:
						v = n
					case 0:
						return "", false
					default:
						v = v*10 + n
					}
					if v > 255 {
						return "", false
					}
					p++
				}
				addr[piece] = addr[piece]<<8 | uint16(v)
				seen++
				if seen == 2 || seen == 4 {
					piece++
				}
			}
			if seen != 4 {
				return "", false
			}
			break
		} else if at(p) == ':' {
			p++
			if at(p) == -1 {
				return "", false
			}
		} else if at(p) != -1 {
			return "", false
		}
		addr[piece] = uint16(value)
		piece++
	}
	if compress != -1 {
		swaps := piece - compress
		piece = 7
		for piece != 0 && swaps > 0 {
			addr[piece], addr[compress+swaps-1] = addr[compress+swaps-1], addr[piece]
			piece--
			swaps--
		}
	} else if piece != 8 {
		return "", false
	}

	// Serialise: find the first longest run of zero pieces (length >= 2).
	best, bestLen := -1, 1
	for i := 0; i < 8; {
		if addr[i] != 0 {
			i++
			continue
		}
		j := i
		for j < 8 && addr[j] == 0 {
			j++
		}
		if j-i > bestLen {
			best, bestLen = i, j-i
		}
		i = j
	}
	var b strings.Builder
	b.WriteByte('[')
	for i := 0; i < 8; i++ {
		if i == best {
			if i == 0 {
				b.WriteString("::")
			} else {
				b.WriteByte(':')
			}
			i += bestLen - 1
			continue
		}
		b.WriteString(strconv.FormatUint(uint64(addr[i]), 16))
		if i != 7 {
			b.WriteByte(':')
		}
	}
	b.WriteByte(']')
	return b.String(), true
}

// twilioPercentDecode replaces every % followed by two hex digits with that byte; any other %
// is kept (the WHATWG percent-decode, and Node's querystring.unescapeBuffer without '+').
func twilioPercentDecode(s string) string {
	if strings.IndexByte(s, '%') < 0 {
		return s
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) {
			if hi, lo := twilioUnhex(s[i+1]), twilioUnhex(s[i+2]); hi >= 0 && lo >= 0 {
				b = append(b, byte(hi<<4|lo))
				i += 2
				continue
			}
		}
		b = append(b, s[i])
	}
	return string(b)
}

func twilioUnhex(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c-'a') + 10
	case 'A' <= c && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// twilioLegacyQuery is twilio-node's withLegacyQuerystring: the query after the first ? (to
// the end, a fragment included) replaced by querystring.stringify(querystring.parse(query))
// as Node 20 computes them; a URL without a query, or with an empty one, is returned as is. u
// is a URL twilioNormalizeURL returned, so ASCII (see twilioQSUnescape).
func twilioLegacyQuery(u string) string {
	q := strings.IndexByte(u, '?')
	if q < 0 || q == len(u)-1 {
		return u
	}
	keys, values := twilioQSParse(u[q+1:])
	var b strings.Builder
	b.WriteString(u[:q+1])
	first := true
	for _, k := range keys {
		for _, v := range values[k] {
			if !first {
				b.WriteByte('&')
			}
			first = false
			twilioQSEscape(&b, k)
			b.WriteByte('=')
			twilioQSEscape(&b, v)
		}
	}
	return b.String()
}

// twilioQSMaxKeys is querystring.parse's default maxKeys.
const twilioQSMaxKeys = 1000

// twilioQSParse is Node 20's querystring.parse(qs) with its defaults: pairs split at &, the
// first = splitting name from value (none: the value is empty), + as a space, then each
// percent-decoded (decodeURIComponent, or on its failure unescapeBuffer(s).toString(), which
// come to the same for the ASCII input given here: see twilioQSUnescape). Empty pairs are
// skipped but count toward maxKeys; after maxKeys &-terminated pairs parsing stops. It returns
// the distinct names in JavaScript's own-property order (array indices ascending, then the
// rest in insertion order) and each name's values in order.
func twilioQSParse(qs string) ([]string, map[string][]string) {
	values := map[string][]string{}
	var order []string
	add := func(pair string) {
		k, v, _ := strings.Cut(pair, "=")
		k = twilioQSUnescape(strings.ReplaceAll(k, "+", " "))
		v = twilioQSUnescape(strings.ReplaceAll(v, "+", " "))
		if _, seen := values[k]; !seen {
			order = append(order, k)
		}
		values[k] = append(values[k], v)
	}
	pairs := twilioQSMaxKeys
	for {
		amp := strings.IndexByte(qs, '&')
		if amp < 0 {
			break
		}
		if amp > 0 {
			add(qs[:amp])
		}
		if pairs--; pairs == 0 {
			qs = ""
			break
		}
		qs = qs[amp+1:]
	}
	if qs != "" {
		add(qs)
	}
	// Object.keys order: array-index names (canonical decimal integers below 2^32-1)
	// ascending, then the others as inserted.
	var indices, others []string
	for _, k := range order {
		if twilioIsArrayIndex(k) {
			indices = append(indices, k)
		} else {
			others = append(others, k)
		}
	}
	// Canonical decimal integers: the shorter is the smaller, and of one length the text
	// order is the numeric one.
	sort.Slice(indices, func(i, j int) bool {
		a, b := indices[i], indices[j]
		return len(a) < len(b) || len(a) == len(b) && a < b
	})
	return append(indices, others...), values
}

// twilioIsArrayIndex reports whether k is an ECMAScript array index: the canonical decimal
// form of an integer in [0, 2^32-2].
func twilioIsArrayIndex(k string) bool {
	n, err := strconv.ParseUint(k, 10, 64)
	return err == nil && n < 1<<32-1 && strconv.FormatUint(n, 10) == k
}

// twilioQSUnescape is querystring.unescape for the ASCII strings the normalised URL gives:
// decodeURIComponent succeeds only when every % starts an escape and the escapes spell valid
// UTF-8, which is then also what the fallback, unescapeBuffer (a % without two hex digits kept)
// decoded by Buffer.toString (WHATWG UTF-8 decode, U+FFFD for each maximal invalid
// subsequence), gives; so the fallback alone is computed.
func twilioQSUnescape(s string) string {
	return twilioUTF8Decode(twilioPercentDecode(s))
}

// twilioUTF8Decode is the WHATWG Encoding Standard's UTF-8 decoder (as Node's Buffer.toString
// applies it): each maximal invalid subsequence becomes one U+FFFD.
func twilioUTF8Decode(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	needed, seen := 0, 0
	lower, upper := byte(0x80), byte(0xBF)
	cp := rune(0)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if needed == 0 {
			switch {
			case c <= 0x7F:
				b.WriteByte(c)
			case 0xC2 <= c && c <= 0xDF:
				needed, cp = 1, rune(c&0x1F)
			case 0xE0 <= c && c <= 0xEF:
				if c == 0xE0 {
					lower = 0xA0
				} else if c == 0xED {
					upper = 0x9F
				}
				needed, cp = 2, rune(c&0xF)
			case 0xF0 <= c && c <= 0xF4:
				if c == 0xF0 {
					lower = 0x90
				} else if c == 0xF4 {
					upper = 0x8F
				}
				needed, cp = 3, rune(c&0x7)
			default:
				b.WriteRune(utf8.RuneError)
			}
			continue
		}
		if c < lower || c > upper {
			// The byte is not part of the sequence: U+FFFD for what came before, and the
			// byte is read again.
			needed, seen, cp = 0, 0, 0
			lower, upper = 0x80, 0xBF
			b.WriteRune(utf8.RuneError)
			i--
			continue
		}
		lower, upper = 0x80, 0xBF
		cp = cp<<6 | rune(c&0x3F)
		if seen++; seen == needed {
			b.WriteRune(cp)
			needed, seen, cp = 0, 0, 0
		}
	}
	if needed != 0 {
		b.WriteRune(utf8.RuneError)
	}
	return b.String()
}

// twilioQSEscape writes querystring.escape(s): the UTF-8 bytes of s percent-encoded (upper-case
// hex) except A-Z a-z 0-9 - . _ ~ ! ' ( ) *. s is valid UTF-8 (it comes from the decoder above).
func twilioQSEscape(b *strings.Builder, s string) {
	twilioPercentEncode(b, s, func(c byte) bool {
		return !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-._~!'()*", c) >= 0)
	})
}
