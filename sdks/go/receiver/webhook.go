package receiver

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	motor "github.com/motor-whatsapp/motor/sdks/go"
)

// MaxBody bounds the body Handler reads. Motor never sends more than
// 256 KiB; the margin is for the contracts' envelopes.
const MaxBody = 1 << 20

// VisitoEvent is the Visito contract's envelope (seed 001).
type VisitoEvent struct {
	EventID       string          `json:"eventId"`
	Type          string          `json:"type"`
	SchemaVersion string          `json:"schemaVersion"`
	TenantID      string          `json:"tenantId"`
	OccurredAt    time.Time       `json:"occurredAt"`
	Data          json.RawMessage `json:"data"`
}

// AsixtoEvent is the Asixto contract's envelope (seed 003).
type AsixtoEvent struct {
	ID   string `json:"id"`
	Type string `json:"type"`
	// Created is unix seconds.
	Created int64 `json:"created"`
	// Environment is "live" or "test".
	Environment string          `json:"environment"`
	Data        json.RawMessage `json:"data"`
	// ReplayOf is the id of the event a replay sends again.
	ReplayOf string `json:"replay_of,omitempty"`
}

// Receive verifies a request signed with one of Motor's profiles and
// parses its envelope from the same raw bytes: raw bytes in, the
// envelope out. Deduplicate by Envelope.EventID (see Inbox).
func (v *Verifier) Receive(h http.Header, body []byte) (*motor.Envelope, *Verified, error) {
	var e motor.Envelope
	verified, err := v.ReceiveInto(h, body, &e)
	if err != nil {
		return nil, nil, err
	}
	return &e, verified, nil
}

// ReceiveInto verifies a request and then decodes its body into dst (a
// *motor.Envelope, *VisitoEvent, *AsixtoEvent, or a type of your own).
// The body is parsed only once the signature verified.
func (v *Verifier) ReceiveInto(h http.Header, body []byte, dst any) (*Verified, error) {
	verified, err := v.Verify(h, body)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(body, dst); err != nil {
		return nil, fmt.Errorf("receiver: a verified body is not the expected JSON: %w", err)
	}
	return verified, nil
}

// Webhook is one verified request as Handler hands it over.
type Webhook struct {
	// Body is the raw body, as signed.
	Body     []byte
	Verified Verified
	// Envelope is the parsed body for Motor's profiles (mw-v1, t-v1,
	// standard-webhooks); nil for the contracts, whose envelopes are
	// VisitoEvent and AsixtoEvent (decode Body).
	Envelope *motor.Envelope
}

// Handler verifies every request before calling next. It answers by
// itself what the contract says: 408 to a stale timestamp (Motor
// retries), 401 to any other verification failure, 413 to a body over
// MaxBody, 400 to a verified body that is not an envelope. next answers
// the rest: 2xx only once the event is durably kept (see Inbox).
func (v *Verifier) Handler(next func(w http.ResponseWriter, r *http.Request, hook *Webhook)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBody))
		if err != nil {
			var tooLarge *http.MaxBytesError
			if errors.As(err, &tooLarge) {
				http.Error(w, "body too large", http.StatusRequestEntityTooLarge)
				return
			}
			http.Error(w, "could not read the body", http.StatusBadRequest)
			return
		}
		verified, err := v.Verify(r.Header, body)
		if err != nil {
			status := http.StatusUnauthorized
			var verr *VerifyError
			if errors.As(err, &verr) {
				status = verr.Status()
			}
			http.Error(w, err.Error(), status)
			return
		}
		hook := &Webhook{Body: body, Verified: *verified}
		switch v.profile {
		case MwV1, TV1, StandardWebhooks:
			var e motor.Envelope
			if err := json.Unmarshal(body, &e); err != nil {
				http.Error(w, "the body is not an envelope", http.StatusBadRequest)
				return
			}
			hook.Envelope = &e
		}
		next(w, r, hook)
	})
}
