package motor

import (
	"context"
	"time"
)

// CheckReport is the graded battery a receiver check runs against a
// webhook subscription's URL (`POST /v1/subscriptions/{id}/check`).
type CheckReport struct {
	URL string `json:"url"`
	// Profile is the signing profile graded (`perfil`).
	Profile string `json:"perfil"`
	// Passed is true when every check passed (`aprobado`).
	Passed  bool         `json:"aprobado"`
	Checks  []CheckRow   `json:"comprobaciones"`
	Timings CheckTimings `json:"tiempos"`
}

// CheckRow is one graded check.
type CheckRow struct {
	// Name: entrega_valida, evento_repetido, reproduccion, seq_menor,
	// timestamp_vencido, timestamp_futuro, cuerpo_alterado,
	// firma_incorrecta, segunda_firma_valida, cabecera_repetida,
	// cuerpo_grande or tiempos.
	Name string `json:"nombre"`
	// Expected is what the contract requires: "2xx", a status,
	// "4xx (no 408/429)" or "p99 < N ms".
	Expected string   `json:"esperado"`
	Got      CheckGot `json:"obtenido"`
	// Verdict is "aprobado" or "fallido" (`veredicto`).
	Verdict string `json:"veredicto"`
	// Reason is why it failed; nil when it passed.
	Reason     *string `json:"motivo"`
	DurationMs *int64  `json:"duracion_ms"`
}

// CheckGot is what the receiver answered: its status, or the sanitised
// transport error (timeout, conexion_rechazada, …) when it did not.
type CheckGot struct {
	Status *int    `json:"status"`
	Error  *string `json:"error"`
}

// CheckTimings are the answer times of every request the battery sent.
type CheckTimings struct {
	Samples int   `json:"muestras"`
	P50Ms   int64 `json:"p50_ms"`
	P99Ms   int64 `json:"p99_ms"`
	// TimeoutMs is the attempt timeout the run used.
	TimeoutMs int64 `json:"timeout_ms"`
}

// CheckSubscription sends the receiver-check battery to a webhook
// subscription's URL and grades the answers. A broker subscription, a
// deleted one, or one with no live key is a 409. Needs scope
// subscriptions:manage.
func (c *Client) CheckSubscription(ctx context.Context, id string) (*CheckReport, error) {
	var out CheckReport
	if _, err := c.do(ctx, call{method: "POST", path: "/v1/subscriptions/" + pathID(id) + "/check", out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}

// ReplayStatus is how far a replay has gone.
type ReplayStatus struct {
	ID             string `json:"replay_id"`
	SubscriptionID string `json:"suscripcion_id"`
	// Deliveries is how many it created; Delivered, Failed and Pending
	// split them.
	Deliveries int64 `json:"entregas"`
	Delivered  int64 `json:"entregadas"`
	Failed     int64 `json:"fallidas"`
	Pending    int64 `json:"pendientes"`
	// Done is true when none is pending (`terminado`).
	Done      bool      `json:"terminado"`
	CreatedAt time.Time `json:"creado_en"`
}

// GetReplay reads a replay's progress. Needs scope subscriptions:manage.
func (c *Client) GetReplay(ctx context.Context, subscriptionID, replayID string) (*ReplayStatus, error) {
	var out ReplayStatus
	path := "/v1/subscriptions/" + pathID(subscriptionID) + "/replays/" + pathID(replayID)
	if _, err := c.do(ctx, call{method: "GET", path: path, out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}

// createStreamToken is the stream token request's body.
type createStreamToken struct {
	Seconds *int64 `json:"segundos,omitempty"`
}

// StreamToken opens one instance's stream: pass Token as `?token=` on
// its stream URL (a browser's EventSource or WebSocket cannot send a
// bearer header).
type StreamToken struct {
	Token      string `json:"token"`
	InstanceID string `json:"instancia_id"`
	// ExpiresAt: after it the token opens nothing (a stream already open
	// goes on).
	ExpiresAt time.Time `json:"vence_en"`
}

// CreateStreamToken makes a short-lived token for one instance's stream,
// valid for seconds (1–60; 0 = 60). Needs scope events:read.
func (c *Client) CreateStreamToken(ctx context.Context, instanceID string, seconds int64) (*StreamToken, error) {
	body := createStreamToken{}
	if seconds != 0 {
		body.Seconds = &seconds
	}
	var out StreamToken
	if _, err := c.do(ctx, call{method: "POST", path: "/v1/instances/" + pathID(instanceID) + "/stream-tokens", body: body, out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}
