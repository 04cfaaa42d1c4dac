package motor

import (
	"bytes"
	"encoding/json"
	"time"
)

// Origin values of an event.
const (
	OriginLive     = "live"
	OriginHistory  = "history"
	OriginOperator = "operator"
)

// Envelope is one event as Motor stores and sends it: the same bytes in
// the ledger API, the stream, webhooks, brokers and Kafka. Unknown fields
// are ignored, so a client keeps working when Motor adds one.
type Envelope struct {
	SchemaVersion int    `json:"schema_version"`
	EventID       string `json:"event_id"`
	InstanceID    string `json:"instance_id"`
	// Seq is gapless per instance: 1, 2, 3, … (0 only in a webhook.test).
	Seq        int64     `json:"seq"`
	Type       string    `json:"type"`
	OccurredAt time.Time `json:"occurred_at"`
	ReceivedAt time.Time `json:"received_at"`
	Generation int64     `json:"generation"`
	// Origin is OriginLive, OriginHistory or OriginOperator.
	Origin    string  `json:"origin"`
	CommandID *string `json:"command_id,omitempty"`
	// Data is the event's content as it arrived, to be decoded by the
	// caller into its own type.
	Data json.RawMessage `json:"data"`
}

// redactedData is `data` once an event's content passed retention.
type redactedData struct {
	Reason   string `json:"motivo"`
	Redacted bool   `json:"redactado"`
}

// Redacted tells whether the event's content passed retention (`data` is
// `{"motivo": "retencion", "redactado": true}`); its seq and ids remain.
func (e *Envelope) Redacted() bool {
	var r redactedData
	dec := json.NewDecoder(bytes.NewReader(e.Data))
	dec.DisallowUnknownFields()
	return dec.Decode(&r) == nil && r.Redacted && r.Reason == "retencion"
}

// NewEvent is one event as a producer appends it.
type NewEvent struct {
	// Type is required: 1–200 characters, no control characters.
	Type string `json:"type"`
	// Data is required: any JSON value but null (it is marshalled with
	// encoding/json; a json.RawMessage is sent as is).
	Data any `json:"data"`
	// OccurredAt defaults to the time Motor received the event.
	OccurredAt *time.Time `json:"occurred_at,omitempty"`
	// Origin defaults to OriginLive.
	Origin    string `json:"origin,omitempty"`
	CommandID string `json:"command_id,omitempty"`
	// SourceID is the provider's id of the event: an event whose source id
	// the instance already has is not stored again, and the stored one
	// comes back.
	SourceID string `json:"source_id,omitempty"`
	// Environment (`entorno`) is EnvironmentLive (the default, "") or
	// EnvironmentTest: the event reaches only the subscriptions of that
	// environment.
	Environment string `json:"entorno,omitempty"`
	// OrderKey (`orden_clave`, 1–200 characters) is the key a subscription
	// with Ordering OrderingKey sends this instance's events one at a time
	// by (a conversation); keys go in parallel. Kept in the ledger, not in
	// the envelope.
	OrderKey string `json:"orden_clave,omitempty"`
}

// LedgerPage is one page of an instance's ledger.
type LedgerPage struct {
	Events []Envelope `json:"events"`
	// NextAfterSeq is the after_seq of the next page.
	NextAfterSeq int64 `json:"next_after_seq"`
	HasMore      bool  `json:"has_more"`
}
