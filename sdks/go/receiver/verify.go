package receiver

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Tolerance is how far a signed timestamp may be from the receiver's
// clock, in either direction (the contract's symmetric window).
const Tolerance = 300 * time.Second

// maxSignatures bounds the signatures looked at in one header: Motor
// sends one per live key (two during a rotation); each costs an HMAC.
const maxSignatures = 8

// Profile is how a request is signed: one of Motor's signing profiles (a
// subscription's `firma`) or another product's contract Motor serves.
type Profile string

const (
	// MwV1 is Motor's default: X-MW-Timestamp, X-MW-Delivery-Id,
	// X-MW-Key-Id and X-MW-Signature: v1=<hex> over
	// timestamp.delivery_id.body.
	MwV1 Profile = "mw-v1"
	// TV1 is one X-MW-Signature: t=<unix>,v1=<hex>[,v1=…] over timestamp.body.
	TV1 Profile = "t-v1"
	// StandardWebhooks is webhook-id, webhook-timestamp and
	// webhook-signature: v1,<base64> over id.timestamp.body
	// (https://www.standardwebhooks.com).
	StandardWebhooks Profile = "standard-webhooks"
	// Visito is the Visito contract: X-Visito-Signature: t=…,v1=… over
	// timestamp.body. Motor does not send it yet.
	Visito Profile = "visito"
	// Asixto is the Asixto contract: Asixto-Signature: t=…,v1=…[,v1=…]
	// over timestamp.body. Motor does not send it yet.
	Asixto Profile = "asixto"
)

// Header names, lower-case.
const (
	HeaderMwTimestamp  = "x-mw-timestamp"
	HeaderMwDeliveryID = "x-mw-delivery-id"
	HeaderMwKeyID      = "x-mw-key-id"
	HeaderMwSignature  = "x-mw-signature"
	HeaderMwEventID    = "x-mw-event-id"
	HeaderWebhookID    = "webhook-id"
	HeaderWebhookTime  = "webhook-timestamp"
	HeaderWebhookSig   = "webhook-signature"
	HeaderVisitoSig    = "x-visito-signature"
	HeaderVisitoEvent  = "x-visito-event-id"
	HeaderAsixtoSig    = "asixto-signature"
)

// SecretPrefix is what Motor (and Standard Webhooks) put before a secret.
const SecretPrefix = "whsec_"

// Secret is a subscription's signing secret as Motor showed it (`whsec_…`)
// with, optionally, its key id (`whk_…`). With a KeyID it only checks the
// mw-v1 signature sent under that id; without one, every signature. Its
// printed forms never show Value.
type Secret struct {
	KeyID string
	Value string
}

// String hides the value: a secret must not end up in a log.
func (s Secret) String() string { return fmt.Sprintf("Secret{KeyID:%q, Value:[REDACTED]}", s.KeyID) }

// GoString hides the value from %#v too.
func (s Secret) GoString() string { return s.String() }

// hmacKey is the HMAC key for profile, nil when the value cannot be one:
// the whole value, prefix included, for every profile but
// standard-webhooks, which keys with the base64 decoding of what follows
// `whsec_` (padding optional), as its specification says. Motor's values
// are `whsec_` and 64 hex digits, which are base64 too.
func (s Secret) hmacKey(profile Profile) []byte {
	if profile != StandardWebhooks {
		return []byte(s.Value)
	}
	encoded := strings.TrimRight(strings.TrimPrefix(s.Value, SecretPrefix), "=")
	key, err := base64.RawStdEncoding.DecodeString(encoded)
	if err != nil || len(key) == 0 {
		return nil
	}
	return key
}

// Verified is what a verified request proved.
type Verified struct {
	Profile Profile
	// Timestamp is the signed timestamp (unix seconds).
	Timestamp int64
	// DeliveryID is X-MW-Delivery-Id (signed) in mw-v1, webhook-id (signed)
	// in standard-webhooks; in t-v1 the unsigned X-MW-Delivery-Id header
	// when present, for logs only.
	DeliveryID string
	// KeyID is the key id of the secret that matched: the X-MW-Key-Id
	// entry in mw-v1, otherwise the Secret's own KeyID.
	KeyID string
}

// Verifier holds a profile and one subscription's secrets (two during a
// rotation): what a server keeps to verify each request. Safe for
// concurrent use.
type Verifier struct {
	profile Profile
	secrets []Secret
	// now is the clock; tests of this package replace it.
	now func() time.Time
}

// NewVerifier refuses an unknown profile, no secrets, an empty secret and,
// for standard-webhooks, a secret that is not base64 after `whsec_`, so a
// misconfigured receiver fails when it starts rather than answering 401
// to every delivery.
func NewVerifier(profile Profile, secrets ...Secret) (*Verifier, error) {
	switch profile {
	case MwV1, TV1, StandardWebhooks, Visito, Asixto:
	default:
		return nil, fmt.Errorf("receiver: unknown profile %q", profile)
	}
	if len(secrets) == 0 {
		return nil, errors.New("receiver: no secret was given")
	}
	for i, s := range secrets {
		if s.Value == "" {
			return nil, fmt.Errorf("receiver: secret #%d is empty", i)
		}
		if s.hmacKey(profile) == nil {
			return nil, fmt.Errorf("receiver: secret #%d is not base64 after its %s prefix (standard-webhooks needs it)", i, SecretPrefix)
		}
	}
	return &Verifier{profile: profile, secrets: append([]Secret(nil), secrets...), now: time.Now}, nil
}

// Profile is the verifier's profile.
func (v *Verifier) Profile() Profile { return v.profile }

// Verify checks one request, from its headers and raw body, at the
// current time. A failure is a *VerifyError; answer its Status().
func (v *Verifier) Verify(h http.Header, body []byte) (*Verified, error) {
	return v.VerifyAt(h, body, v.now())
}

// VerifyAt is Verify at the time now.
func (v *Verifier) VerifyAt(h http.Header, body []byte, now time.Time) (*Verified, error) {
	return Verify(v.profile, h, body, v.secrets, now)
}

// Verify checks a request signed with profile against secrets at now.
// Header shape errors come first, then the window (408), then the
// signatures (401).
func Verify(profile Profile, h http.Header, body []byte, secrets []Secret, now time.Time) (*Verified, error) {
	var verified *Verified
	var err error
	switch profile {
	case MwV1:
		verified, err = verifyMwV1(h, body, secrets, now)
	case TV1:
		verified, err = verifyTimestamped(TV1, HeaderMwSignature, h, body, secrets, now)
		if err == nil {
			// Not signed in this profile: reported for logs only.
			verified.DeliveryID, err = optional(h, HeaderMwDeliveryID)
		}
	case StandardWebhooks:
		verified, err = verifyStandardWebhooks(h, body, secrets, now)
	case Visito:
		verified, err = verifyTimestamped(Visito, HeaderVisitoSig, h, body, secrets, now)
	case Asixto:
		verified, err = verifyTimestamped(Asixto, HeaderAsixtoSig, h, body, secrets, now)
	default:
		return nil, fmt.Errorf("receiver: unknown profile %q", profile)
	}
	if err != nil {
		return nil, err
	}
	return verified, nil
}

// parseTimestamp reads a timestamp as sent: 1 to 18 ASCII digits. The
// text itself is what was signed, so callers keep it as is.
func parseTimestamp(header, text string) (int64, error) {
	if text == "" || len(text) > 18 {
		return 0, malformed(header, "not unix seconds")
	}
	for i := 0; i < len(text); i++ {
		if text[i] < '0' || text[i] > '9' {
			return 0, malformed(header, "not unix seconds")
		}
	}
	ts, err := strconv.ParseInt(text, 10, 64)
	if err != nil {
		return 0, malformed(header, "not unix seconds")
	}
	return ts, nil
}

// checkWindow is the symmetric window: |now - timestamp| <= Tolerance.
func checkWindow(timestamp int64, now time.Time) error {
	n := now.Unix()
	diff := n - timestamp
	if diff < 0 {
		diff = -diff
	}
	if diff > int64(Tolerance/time.Second) {
		return &VerifyError{Kind: KindStale, Timestamp: timestamp, Now: n}
	}
	return nil
}

// mac is HMAC-SHA256 of the parts under key.
func mac(key []byte, parts ...[]byte) []byte {
	m := hmac.New(sha256.New, key)
	for _, p := range parts {
		m.Write(p)
	}
	return m.Sum(nil)
}

// decodeHex reads a v1 value: the 32 bytes of an HMAC-SHA256 in hex.
func decodeHex(header, value string) ([]byte, error) {
	tag, err := hex.DecodeString(value)
	if err != nil || len(tag) != sha256.Size {
		return nil, malformed(header, "v1 is not 64 hex digits")
	}
	return tag, nil
}
