package protocol

import "bytes"

// maxJSONDepth is encoding/json's limit on nesting; deeper documents are not valid to it.
const maxJSONDepth = 10000

// validJSON reports exactly what json.Valid reports, several times faster on bodies that are
// mostly long strings, as webhook payloads are: encoding/json's scanner takes an indirect call
// per byte, this takes a tight loop per string. It accepts what encoding/json accepts (RFC 8259
// grammar, any bytes of 0x80 and above inside strings, nesting to maxJSONDepth) and nothing
// else; FuzzValidJSON holds it to that.
func validJSON(b []byte) bool {
	var inline [64]bool
	objects := inline[:0] // the open containers, innermost last: true for an object
	i := skipJSONSpace(b, 0)
	for {
		// A value starts at b[i].
		if i >= len(b) {
			return false
		}
		switch c := b[i]; {
		case c == '{' || c == '[':
			if len(objects) == maxJSONDepth {
				return false
			}
			objects = append(objects, c == '{')
			i = skipJSONSpace(b, i+1)
			closer := byte(']')
			if c == '{' {
				closer = '}'
			}
			if i < len(b) && b[i] == closer {
				objects = objects[:len(objects)-1]
				i++
				break
			}
			if c == '{' {
				if i = scanJSONMemberName(b, i); i < 0 {
					return false
				}
			}
			continue
		case c == '"':
			if i = scanJSONString(b, i); i < 0 {
				return false
			}
		case c == '-' || '0' <= c && c <= '9':
			if i = scanJSONNumber(b, i); i < 0 {
				return false
			}
		case bytes.HasPrefix(b[i:], []byte("true")) || bytes.HasPrefix(b[i:], []byte("null")):
			i += 4
		case bytes.HasPrefix(b[i:], []byte("false")):
			i += 5
		default:
			return false
		}
		// After a value: a comma and the next value, or containers closing, or the end.
		for {
			i = skipJSONSpace(b, i)
			if len(objects) == 0 {
				return i == len(b)
			}
			if i >= len(b) {
				return false
			}
			inObject := objects[len(objects)-1]
			if b[i] == ',' {
				i = skipJSONSpace(b, i+1)
				if inObject {
					if i = scanJSONMemberName(b, i); i < 0 {
						return false
					}
				}
				break
			}
			if inObject && b[i] == '}' || !inObject && b[i] == ']' {
				objects = objects[:len(objects)-1]
				i++
				continue
			}
			return false
		}
	}
}

// scanJSONMemberName checks `"name" :` at b[i] and returns the index of the value after it,
// or -1.
func scanJSONMemberName(b []byte, i int) int {
	if i >= len(b) || b[i] != '"' {
		return -1
	}
	if i = scanJSONString(b, i); i < 0 {
		return -1
	}
	i = skipJSONSpace(b, i)
	if i >= len(b) || b[i] != ':' {
		return -1
	}
	return skipJSONSpace(b, i+1)
}

// scanJSONString checks the string whose opening quote is at b[i] and returns the index past
// its closing quote, or -1.
func scanJSONString(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			return i + 1
		case c < 0x20:
			return -1
		case c == '\\':
			i++
			if i >= len(b) {
				return -1
			}
			switch b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if i+4 >= len(b) {
					return -1
				}
				for _, h := range b[i+1 : i+5] {
					if !('0' <= h && h <= '9' || 'a' <= h && h <= 'f' || 'A' <= h && h <= 'F') {
						return -1
					}
				}
				i += 4
			default:
				return -1
			}
		}
	}
	return -1
}

// scanJSONNumber checks the number starting at b[i] and returns the index past it, or -1.
func scanJSONNumber(b []byte, i int) int {
	digits := func(i int) int { // one or more
		start := i
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
		if i == start {
			return -1
		}
		return i
	}
	if b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	default:
		if i = digits(i); i < 0 {
			return -1
		}
	}
	if i < len(b) && b[i] == '.' {
		if i = digits(i + 1); i < 0 {
			return -1
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i = digits(i); i < 0 {
			return -1
		}
	}
	return i
}
