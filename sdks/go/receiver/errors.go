package receiver

import (
	"fmt"
	"net/http"
)

// Kind classifies a VerifyError.
type Kind int

const (
	// KindMissing: a header the profile needs is absent or empty.
	KindMissing Kind = iota + 1
	// KindRepeatedHeader: a header that must arrive once arrived more than
	// once. Its values are never joined: Motor sends it once.
	KindRepeatedHeader
	// KindMalformed: a header does not have the profile's shape.
	KindMalformed
	// KindStale: the signed timestamp is more than Tolerance away from the
	// receiver's clock, in either direction.
	KindStale
	// KindBadSignature: well-formed headers, but no signature matches any
	// secret.
	KindBadSignature
)

// VerifyError is a request that does not verify. Status says what to
// answer: 408 for a stale timestamp (a clock problem: Motor retries with
// a fresh signature), 401 for everything else (not signed by a secret you
// hold: Motor suspends the subscription and alerts its operator).
type VerifyError struct {
	Kind Kind
	// Header is the header at fault, lower-case; empty for KindStale and
	// KindBadSignature.
	Header string
	// Reason says what is wrong with a malformed header.
	Reason string
	// Timestamp and Now (unix seconds) are set for KindStale.
	Timestamp, Now int64
}

// The kinds as values for errors.Is: errors.Is(err, receiver.ErrStale).
var (
	ErrMissing        = &VerifyError{Kind: KindMissing}
	ErrRepeatedHeader = &VerifyError{Kind: KindRepeatedHeader}
	ErrMalformed      = &VerifyError{Kind: KindMalformed}
	ErrStale          = &VerifyError{Kind: KindStale}
	ErrBadSignature   = &VerifyError{Kind: KindBadSignature}
)

func (e *VerifyError) Error() string {
	switch e.Kind {
	case KindMissing:
		return fmt.Sprintf("header %s is missing", e.Header)
	case KindRepeatedHeader:
		return fmt.Sprintf("header %s arrived more than once", e.Header)
	case KindMalformed:
		return fmt.Sprintf("header %s is malformed: %s", e.Header, e.Reason)
	case KindStale:
		return fmt.Sprintf("timestamp %d is outside the window around %d", e.Timestamp, e.Now)
	case KindBadSignature:
		return "no signature matches a known secret"
	}
	return "the request does not verify"
}

// Is matches any VerifyError of the same kind.
func (e *VerifyError) Is(target error) bool {
	t, ok := target.(*VerifyError)
	return ok && t.Kind == e.Kind
}

// Status is the HTTP status to answer: 408 for KindStale, else 401.
func (e *VerifyError) Status() int {
	if e.Kind == KindStale {
		return http.StatusRequestTimeout
	}
	return http.StatusUnauthorized
}

func malformed(header, reason string) *VerifyError {
	return &VerifyError{Kind: KindMalformed, Header: header, Reason: reason}
}
