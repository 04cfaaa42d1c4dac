package motor

import "time"

// States of a delivery (its `estado`).
const (
	DeliveryPending   = "pendiente"
	DeliveryDelivered = "entregada"
	DeliveryFailed    = "fallida"
	// DeliveryCancelled: its subscription's contract cancels on
	// deactivation (visito); CancelReason says why.
	DeliveryCancelled = "cancelada"
)

// Delivery is one (event, subscription) delivery as listed.
type Delivery struct {
	// ID is X-MW-Delivery-Id: the same on every retry of this delivery.
	ID               string `json:"delivery_id"`
	SubscriptionID   string `json:"suscripcion_id"`
	SubscriptionName string `json:"suscripcion"`
	InstanceID       string `json:"instance_id"`
	InstanceName     string `json:"instancia"`
	EventID          string `json:"event_id"`
	Seq              int64  `json:"seq"`
	Type             string `json:"type"`
	// State is DeliveryPending, DeliveryDelivered, DeliveryFailed or
	// DeliveryCancelled.
	State         string     `json:"estado"`
	Attempts      int        `json:"intentos"`
	NextAttemptAt *time.Time `json:"proximo_intento_en"`
	LastStatus    *int       `json:"ultimo_status"`
	// LastError is a sanitised code (http_503, timeout, …).
	LastError *string   `json:"ultimo_error"`
	CreatedAt time.Time `json:"creada_en"`
	// ReplayOf is the delivery a replay or a manual retry sends again.
	ReplayOf *string `json:"replay_of"`
	// CancelReason is why it ended cancelada (suscripcion_pausada,
	// suscripcion_suspendida, suscripcion_eliminada, clave_revocada,
	// clave_vencida, clave_sin_permiso); nil otherwise.
	CancelReason *string `json:"motivo,omitempty"`
}

// DeliveryDetail is one delivery with its attempts.
type DeliveryDetail struct {
	Delivery
	AttemptDetails []Attempt `json:"intentos_detalle"`
}

// Attempt is one attempt of a delivery.
type Attempt struct {
	Number     int       `json:"numero"`
	StartedAt  time.Time `json:"iniciado_en"`
	DurationMs int       `json:"duracion_ms"`
	// Status is nil when no answer came.
	Status *int `json:"status"`
	// Error is a sanitised code; nil when delivered.
	Error *string `json:"error"`
	// KeyIDs are the key ids that signed it, comma-separated, newest first.
	KeyIDs string `json:"key_ids"`
	// Throttled: a 429/503 with Retry-After held the subscription's lanes.
	Throttled bool `json:"throttled"`
}

// DeliveryList is one page of deliveries, newest first.
type DeliveryList struct {
	Deliveries []Delivery `json:"entregas"`
	Page       int        `json:"pagina"`
	PerPage    int        `json:"por_pagina"`
	HasMore    bool       `json:"hay_mas"`
}

// ReplayRequest asks for a range of one instance's ledger (InstanceID,
// FromSeq, ToSeq) or for a list of EventIDs, not both.
type ReplayRequest struct {
	InstanceID string   `json:"instancia_id,omitempty"`
	FromSeq    int64    `json:"desde_seq,omitempty"`
	ToSeq      int64    `json:"hasta_seq,omitempty"`
	EventIDs   []string `json:"event_ids,omitempty"`
	// Reason (`motivo`) is required: 1–300 characters, kept for the audit.
	Reason string `json:"motivo"`
}

// Replay is the answer to a replay request.
type Replay struct {
	ID             string `json:"replay_id"`
	SubscriptionID string `json:"suscripcion_id"`
	// Deliveries is how many new deliveries it created.
	Deliveries int64     `json:"entregas"`
	CreatedAt  time.Time `json:"creado_en"`
}

// retryRequest is the optional body of a manual retry.
type retryRequest struct {
	Reason string `json:"motivo,omitempty"`
}
