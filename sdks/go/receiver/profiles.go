package receiver

import (
	"crypto/hmac"
	"encoding/base64"
	"net/http"
	"strings"
	"time"
)

// verifyMwV1 checks Motor's mw-v1: every (key id, signature) pair against
// the secrets given for that key id and those given without one.
func verifyMwV1(h http.Header, body []byte, secrets []Secret, now time.Time) (*Verified, error) {
	tsText, err := required(h, HeaderMwTimestamp)
	if err != nil {
		return nil, err
	}
	timestamp, err := parseTimestamp(HeaderMwTimestamp, tsText)
	if err != nil {
		return nil, err
	}
	deliveryID, err := required(h, HeaderMwDeliveryID)
	if err != nil {
		return nil, err
	}
	if strings.Contains(deliveryID, ".") {
		// The id is a field of the signed message: a '.' would let bytes
		// move between it and the body under the same signature.
		return nil, malformed(HeaderMwDeliveryID, "contains '.'")
	}
	keyIDs, err := requiredList(h, HeaderMwKeyID)
	if err != nil {
		return nil, err
	}
	signatures, err := requiredList(h, HeaderMwSignature)
	if err != nil {
		return nil, err
	}
	if len(keyIDs) != len(signatures) {
		return nil, malformed(HeaderMwKeyID, "not as many key ids as signatures")
	}
	type pair struct {
		keyID string
		tag   []byte
	}
	var pairs []pair
	for i, item := range signatures {
		scheme, value, ok := strings.Cut(item, "=")
		if !ok {
			return nil, malformed(HeaderMwSignature, "not scheme=value")
		}
		// Other schemes are a later Motor's: skipped, never an error.
		if scheme == "v1" {
			tag, err := decodeHex(HeaderMwSignature, value)
			if err != nil {
				return nil, err
			}
			pairs = append(pairs, pair{keyIDs[i], tag})
		}
	}
	if len(pairs) == 0 {
		return nil, malformed(HeaderMwSignature, "no v1 signature")
	}
	if err := checkWindow(timestamp, now); err != nil {
		return nil, err
	}
	expected := make([][]byte, len(secrets))
	for i, s := range secrets {
		expected[i] = mac(s.hmacKey(MwV1), []byte(tsText), []byte("."), []byte(deliveryID), []byte("."), body)
	}
	for _, p := range pairs {
		for i, s := range secrets {
			if (s.KeyID == "" || s.KeyID == p.keyID) && hmac.Equal(expected[i], p.tag) {
				return &Verified{Profile: MwV1, Timestamp: timestamp, DeliveryID: deliveryID, KeyID: p.keyID}, nil
			}
		}
	}
	return nil, ErrBadSignature
}

// requiredList is a required header's comma-separated, non-empty,
// trimmed items, at most maxSignatures of them.
func requiredList(h http.Header, name string) ([]string, error) {
	value, err := required(h, name)
	if err != nil {
		return nil, err
	}
	items := strings.Split(value, ",")
	if len(items) > maxSignatures {
		return nil, malformed(name, "too many items")
	}
	for i, item := range items {
		if items[i] = strings.TrimSpace(item); items[i] == "" {
			return nil, malformed(name, "empty list item")
		}
	}
	return items, nil
}

// verifyTimestamped checks the `t=<unix>,v1=<hex>[,v1=<hex>]` header named
// header (t-v1, Visito, Asixto), each v1 over `t + "." + body`: every v1
// against every secret, any match accepts. Unknown `key=value` items are
// skipped (a later scheme); t must appear exactly once. The header
// travels once with every signature inside; a repeated one is refused.
func verifyTimestamped(profile Profile, header string, h http.Header, body []byte, secrets []Secret, now time.Time) (*Verified, error) {
	value, err := required(h, header)
	if err != nil {
		return nil, err
	}
	items := strings.Split(value, ",")
	if len(items) > maxSignatures+1 {
		return nil, malformed(header, "too many items")
	}
	var tsText string
	var hasTimestamp bool
	var tags [][]byte
	for _, item := range items {
		key, val, ok := strings.Cut(strings.TrimSpace(item), "=")
		if !ok {
			return nil, malformed(header, "not key=value")
		}
		switch key {
		case "t":
			if hasTimestamp {
				return nil, malformed(header, "t more than once")
			}
			tsText, hasTimestamp = val, true
		case "v1":
			tag, err := decodeHex(header, val)
			if err != nil {
				return nil, err
			}
			tags = append(tags, tag)
		}
	}
	if !hasTimestamp {
		return nil, malformed(header, "no t=")
	}
	timestamp, err := parseTimestamp(header, tsText)
	if err != nil {
		return nil, err
	}
	if len(tags) == 0 {
		return nil, malformed(header, "no v1 signature")
	}
	if err := checkWindow(timestamp, now); err != nil {
		return nil, err
	}
	for _, s := range secrets {
		expected := mac(s.hmacKey(profile), []byte(tsText), []byte("."), body)
		for _, tag := range tags {
			if hmac.Equal(expected, tag) {
				return &Verified{Profile: profile, Timestamp: timestamp, KeyID: s.KeyID}, nil
			}
		}
	}
	return nil, ErrBadSignature
}

// verifyStandardWebhooks checks Standard Webhooks 1.0: signatures of other
// versions (v1a, asymmetric) are skipped; any v1 matching any secret
// accepts.
func verifyStandardWebhooks(h http.Header, body []byte, secrets []Secret, now time.Time) (*Verified, error) {
	id, err := required(h, HeaderWebhookID)
	if err != nil {
		return nil, err
	}
	if strings.Contains(id, ".") {
		return nil, malformed(HeaderWebhookID, "contains '.'")
	}
	tsText, err := required(h, HeaderWebhookTime)
	if err != nil {
		return nil, err
	}
	timestamp, err := parseTimestamp(HeaderWebhookTime, tsText)
	if err != nil {
		return nil, err
	}
	value, err := required(h, HeaderWebhookSig)
	if err != nil {
		return nil, err
	}
	items := strings.Fields(value)
	if len(items) > maxSignatures {
		return nil, malformed(HeaderWebhookSig, "too many signatures")
	}
	var tags [][]byte
	for _, item := range items {
		version, sig, ok := strings.Cut(item, ",")
		if !ok {
			return nil, malformed(HeaderWebhookSig, "not version,signature")
		}
		if version != "v1" {
			continue
		}
		tag, err := base64.StdEncoding.DecodeString(sig)
		if err != nil || len(tag) != 32 {
			return nil, malformed(HeaderWebhookSig, "v1 is not a base64 HMAC-SHA256")
		}
		tags = append(tags, tag)
	}
	if len(tags) == 0 {
		return nil, malformed(HeaderWebhookSig, "no v1 signature")
	}
	if err := checkWindow(timestamp, now); err != nil {
		return nil, err
	}
	for _, s := range secrets {
		key := s.hmacKey(StandardWebhooks)
		if key == nil {
			continue
		}
		expected := mac(key, []byte(id), []byte("."), []byte(tsText), []byte("."), body)
		for _, tag := range tags {
			if hmac.Equal(expected, tag) {
				return &Verified{Profile: StandardWebhooks, Timestamp: timestamp, DeliveryID: id, KeyID: s.KeyID}, nil
			}
		}
	}
	return nil, ErrBadSignature
}
