package receiver

import (
	"net/http"
	"strings"
)

// values is every value of header name, whatever the case of the map's
// keys (net/http canonicalises them; a hand-built http.Header may not).
func values(h http.Header, name string) []string {
	var out []string
	for k, v := range h {
		if strings.EqualFold(k, name) {
			out = append(out, v...)
		}
	}
	return out
}

// optional is the one value of name, trimmed: "" when absent or empty, an
// error when it arrived twice or holds control characters.
func optional(h http.Header, name string) (string, error) {
	vs := values(h, name)
	switch len(vs) {
	case 0:
		return "", nil
	case 1:
		text := strings.TrimSpace(vs[0])
		for i := 0; i < len(text); i++ {
			if text[i] < 0x20 || text[i] == 0x7f {
				return "", malformed(name, "control characters")
			}
		}
		return text, nil
	default:
		return "", &VerifyError{Kind: KindRepeatedHeader, Header: name}
	}
}

// required is like optional, with absent or empty a KindMissing error.
func required(h http.Header, name string) (string, error) {
	v, err := optional(h, name)
	if err == nil && v == "" {
		return "", &VerifyError{Kind: KindMissing, Header: name}
	}
	return v, err
}
