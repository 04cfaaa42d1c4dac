package motor

import (
	"encoding/json"
	"time"
)

// Signing profiles of a subscription (its `firma`).
const (
	SigningMwV1             = "mw-v1"
	SigningTV1              = "t-v1"
	SigningStandardWebhooks = "standard-webhooks"
)

// Product contracts a subscription's deliveries follow (its `contrato`):
// body, headers and signature (docs/CONTRACTS.md). Under any but
// ContractMotor the contract fixes the signature and `firma` is not used.
const (
	ContractMotor            = "motor"
	ContractVisito           = "visito"
	ContractAsixto           = "asixto"
	ContractStandardWebhooks = "standard-webhooks"
)

// Environments of events and subscriptions (their `entorno`): an event
// reaches only the subscriptions of its own. An Asixto delivery carries it
// as `environment`.
const (
	EnvironmentLive = "live"
	EnvironmentTest = "test"
)

// Orderings of a subscription (its `orden`; docs/CONTRACTS.md).
// OrderingInstance is `ordenado: true`, OrderingNone `ordenado: false`;
// OrderingKey sends one delivery at a time per (instance, event
// `orden_clave`), keys in parallel.
const (
	OrderingInstance = "instancia"
	OrderingKey      = "clave"
	OrderingNone     = "ninguno"
)

// States of a subscription (its `estado`).
const (
	SubscriptionActive    = "activa"
	SubscriptionPaused    = "pausada"
	SubscriptionSuspended = "suspendida"
	SubscriptionDeleted   = "eliminada"
)

// Subscription is a subscription as the API shows it.
type Subscription struct {
	ID string `json:"id"`
	// ClientID is the app that owns it (`cliente_id`).
	ClientID string `json:"cliente_id"`
	Name     string `json:"nombre"`
	URL      string `json:"url"`
	// HasCredentials tells whether broker credentials are stored (they are
	// never shown).
	HasCredentials bool `json:"credenciales"`
	// Instances empty: every instance of the app.
	Instances []string `json:"instancias"`
	// Types empty: every event type.
	Types   []string `json:"tipos"`
	Ordered bool     `json:"ordenado"`
	// Ordering is OrderingKey, or "" (absent from the answer): what
	// Ordered says (OrderingInstance or OrderingNone).
	Ordering string `json:"orden,omitempty"`
	// Signing is the profile: SigningMwV1, SigningTV1 or
	// SigningStandardWebhooks.
	Signing string `json:"firma"`
	// Contract is one of the Contract* constants; "" (absent from the
	// answer) is ContractMotor.
	Contract string `json:"contrato,omitempty"`
	// Environment is EnvironmentLive ("" when absent from the answer) or
	// EnvironmentTest, fixed at creation.
	Environment  string `json:"entorno,omitempty"`
	MaxPerSecond *int64 `json:"max_por_segundo"`
	// State is one of the Subscription* constants.
	State string `json:"estado"`
	// Reason is why the engine suspended it (`motivo`), nil unless
	// suspended.
	Reason      *string    `json:"motivo"`
	SuspendedAt *time.Time `json:"suspendida_en"`
	// Version is bumped on every change; pass it as ExpectedVersion.
	Version   int64        `json:"version"`
	Keys      []SigningKey `json:"claves"`
	Pending   int64        `json:"pendientes"`
	Failed    int64        `json:"fallidas"`
	CreatedAt time.Time    `json:"creada_en"`
	UpdatedAt time.Time    `json:"actualizada_en"`
}

// SigningKey is one of a subscription's signing keys (`claves`): never
// its value.
type SigningKey struct {
	KeyID     string    `json:"key_id"`
	CreatedAt time.Time `json:"creado_en"`
	// ExpiresAt is set only while a rotation retires this key.
	ExpiresAt *time.Time `json:"vence_en"`
}

// Secret is a signing secret, shown only by create and rotate.
type Secret struct {
	KeyID string `json:"key_id"`
	// Value (`whsec_…`) is what the receiver verifies with, as shown.
	Value string `json:"valor"`
}

// String hides the value: a secret must not end up in a log. Read Value
// to hand it to the receiver.
func (s Secret) String() string { return "Secret{KeyID:" + s.KeyID + ", Value:[REDACTED]}" }

// GoString hides the value from %#v too.
func (s Secret) GoString() string { return s.String() }

// SubscriptionWithSecret is the answer to create and rotate.
type SubscriptionWithSecret struct {
	Subscription Subscription `json:"suscripcion"`
	Secret       Secret       `json:"secreto"`
}

// Credentials are a broker destination's login: User and Password, or
// Token (NATS). Sealed at rest and never shown again.
type Credentials struct {
	User     string `json:"usuario,omitempty"`
	Password string `json:"clave,omitempty"`
	Token    string `json:"token,omitempty"`
}

// CreateSubscription is the body of a subscription's creation.
type CreateSubscription struct {
	Name string `json:"nombre"`
	URL  string `json:"url"`
	// Instances: up to 200 of the app's; empty = all.
	Instances []string `json:"instancias,omitempty"`
	// Types: up to 50; empty = all.
	Types []string `json:"tipos,omitempty"`
	// Ordered is the older form of Ordering: true = OrderingInstance,
	// false = OrderingNone.
	Ordered *bool `json:"ordenado,omitempty"`
	// Ordering is one of the Ordering* constants; with neither it nor
	// Ordered, the contract's default (motor: OrderingInstance, visito:
	// OrderingNone, asixto: OrderingKey).
	Ordering string `json:"orden,omitempty"`
	// Signing defaults to SigningMwV1.
	Signing string `json:"firma,omitempty"`
	// Contract is one of the Contract* constants; "" = the app's
	// (ContractMotor unless the operator chose another).
	Contract string `json:"contrato,omitempty"`
	// Environment is EnvironmentLive (the default, "") or
	// EnvironmentTest: it receives only events of that environment.
	Environment  string       `json:"entorno,omitempty"`
	Credentials  *Credentials `json:"credenciales,omitempty"`
	MaxPerSecond *int64       `json:"max_por_segundo,omitempty"`
}

// UpdateSubscription is a PATCH: nil fields are left as they are.
type UpdateSubscription struct {
	Name      *string   `json:"nombre,omitempty"`
	URL       *string   `json:"url,omitempty"`
	Instances *[]string `json:"instancias,omitempty"`
	Types     *[]string `json:"tipos,omitempty"`
	Ordered   *bool     `json:"ordenado,omitempty"`
	// Ordering: one of the Ordering* constants.
	Ordering *string `json:"orden,omitempty"`
	Signing  *string `json:"firma,omitempty"`
	// Contract: one of the Contract* constants; applies from the next
	// attempt.
	Contract *string `json:"contrato,omitempty"`
	// Environment is fixed at creation: the subscription's own changes
	// nothing, the other one is refused (422).
	Environment *string `json:"entorno,omitempty"`
	// State: SubscriptionActive or SubscriptionPaused (reactivates a
	// suspended one too).
	State *string `json:"estado,omitempty"`
	// ExpectedVersion (`version_esperada`): when set, a subscription whose
	// version is another is not changed and the call fails with 409.
	ExpectedVersion *int64       `json:"version_esperada,omitempty"`
	Credentials     *Credentials `json:"credenciales,omitempty"`
	// RemoveCredentials sends `"credenciales": null`.
	RemoveCredentials bool   `json:"-"`
	MaxPerSecond      *int64 `json:"max_por_segundo,omitempty"`
	// RemoveMaxPerSecond sends `"max_por_segundo": null` (no limit).
	RemoveMaxPerSecond bool `json:"-"`
}

// MarshalJSON writes the fields that are set, and an explicit null for
// the two that a null clears.
func (u UpdateSubscription) MarshalJSON() ([]byte, error) {
	type plain UpdateSubscription
	raw, err := json.Marshal(plain(u))
	if err != nil || (!u.RemoveCredentials && !u.RemoveMaxPerSecond) {
		return raw, err
	}
	fields := map[string]json.RawMessage{}
	if err := json.Unmarshal(raw, &fields); err != nil {
		return nil, err
	}
	if u.RemoveCredentials {
		fields["credenciales"] = json.RawMessage("null")
	}
	if u.RemoveMaxPerSecond {
		fields["max_por_segundo"] = json.RawMessage("null")
	}
	return json.Marshal(fields)
}

// TestResult is the outcome of a subscription's test request.
type TestResult struct {
	OK bool `json:"ok"`
	// Status is the receiver's HTTP status, nil when none answered.
	Status     *int  `json:"status"`
	DurationMs int64 `json:"duracion_ms"`
	// Error is a sanitised code (http_500, timeout, …); nil when OK.
	Error *string `json:"error"`
}
