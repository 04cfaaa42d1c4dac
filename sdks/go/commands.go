package motor

import (
	"context"
	"encoding/json"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// A command's status, as seed 002's table names them.
const (
	CommandAccepted  = "aceptado"
	CommandQueued    = "en_cola"
	CommandExecuting = "ejecutando"
	CommandSent      = "enviado"
	CommandCompleted = "completado"
	CommandFailed    = "fallido"
	CommandAmbiguous = "ambiguo"
	CommandCancelled = "cancelado"
)

// Command is what an app asked for, as Motor stores it: a send (Kind
// "mensaje", with Chat and Content) or another kind (Parameters).
type Command struct {
	ID         string `json:"id"`
	InstanceID string `json:"instance_id"`
	// Kind is the `tipo`: "mensaje", a remote operation ("grupos", …) or
	// instance control ("reconectar", …).
	Kind string `json:"tipo"`
	// Status is one of the Command* constants.
	Status  string     `json:"status"`
	NextTry *time.Time `json:"next_try"`
	// ErrorCode, Stage (previa, servidor, frontera) and ServerCode tell
	// why it failed or was left in doubt.
	ErrorCode         *string `json:"error_code"`
	Stage             *string `json:"stage"`
	ServerCode        *string `json:"server_code"`
	ProviderMessageID *string `json:"provider_message_id"`
	// AcceptedAt is when the provider's server accepted a send (`aceptado_en`).
	AcceptedAt         *time.Time      `json:"aceptado_en"`
	Chat               *string         `json:"chat"`
	Content            json.RawMessage `json:"contenido"`
	Parameters         json.RawMessage `json:"parametros"`
	ExpiresAt          *time.Time      `json:"expires_at"`
	CorrelationID      *string         `json:"correlation_id"`
	ExpectedGeneration *int64          `json:"generacion_esperada"`
	// Generation is the instance's generation when the command was accepted.
	Generation int64     `json:"generation"`
	CreatedAt  time.Time `json:"creado_en"`
	UpdatedAt  time.Time `json:"actualizado_en"`
}

// CommandList is one page of an instance's commands, newest first.
type CommandList struct {
	Commands []Command `json:"commands"`
	Page     int       `json:"pagina"`
	PerPage  int       `json:"por_pagina"`
	HasMore  bool      `json:"hay_mas"`
}

// CommandOptions are the optional fields every command request may carry.
type CommandOptions struct {
	// ExpiresAt: if no executor took it by then, it ends fallido
	// (comando_vencido). Zero = never.
	ExpiresAt time.Time
	// CorrelationID is the app's own reference (1–200 characters).
	CorrelationID string
	// ExpectedGeneration: refused with 409 when the instance's generation
	// is another (it was relinked). 0 = not checked.
	ExpectedGeneration int64
}

// Message is a send: the destination and the content handed to the
// executor as is (any value that encodes as a JSON object).
type Message struct {
	Chat    string
	Content any
	CommandOptions
}

// Operation is any other command: its kind (a remote operation such as
// "grupos", or instance control such as "reconectar") and its parameters
// (any value that encodes as a JSON object; nil = {}).
type Operation struct {
	Kind       string
	Parameters any
	CommandOptions
}

// optionsWire are CommandOptions as both bodies carry them.
type optionsWire struct {
	ExpiresAt          *string `json:"expires_at,omitempty"`
	CorrelationID      *string `json:"correlation_id,omitempty"`
	ExpectedGeneration *int64  `json:"generacion_esperada,omitempty"`
}

// messageRequest is a send's body (NuevoMensaje).
type messageRequest struct {
	Chat    string `json:"chat"`
	Content any    `json:"contenido"`
	optionsWire
}

// operationRequest is another command's body (NuevoComando).
type operationRequest struct {
	Kind       string `json:"tipo"`
	Parameters any    `json:"parametros,omitempty"`
	optionsWire
}

func (o CommandOptions) wire() optionsWire {
	var w optionsWire
	if !o.ExpiresAt.IsZero() {
		s := o.ExpiresAt.UTC().Format(time.RFC3339Nano)
		w.ExpiresAt = &s
	}
	if o.CorrelationID != "" {
		w.CorrelationID = &o.CorrelationID
	}
	if o.ExpectedGeneration != 0 {
		w.ExpectedGeneration = &o.ExpectedGeneration
	}
	return w
}

// SendMessage stores a send (a "mensaje" command, en_cola) and returns it
// once Motor committed it. idempotencyKey is required (1–200 characters):
// a repeat returns the command the first request stored, also after a
// relink; the same key with another request is a 409. Needs scope
// commands:write.
func (c *Client) SendMessage(ctx context.Context, instanceID, idempotencyKey string, m Message) (*Command, error) {
	body := messageRequest{Chat: m.Chat, Content: m.Content, optionsWire: m.CommandOptions.wire()}
	return c.command(ctx, "/v1/instances/"+pathID(instanceID)+"/messages", idempotencyKey, body)
}

// SubmitCommand stores any other command (aceptado) and returns it once
// committed. idempotencyKey is optional ("" = none). Needs scope
// commands:write.
func (c *Client) SubmitCommand(ctx context.Context, instanceID, idempotencyKey string, op Operation) (*Command, error) {
	body := operationRequest{Kind: op.Kind, Parameters: op.Parameters, optionsWire: op.CommandOptions.wire()}
	return c.command(ctx, "/v1/instances/"+pathID(instanceID)+"/commands", idempotencyKey, body)
}

func (c *Client) command(ctx context.Context, path, idempotencyKey string, body any) (*Command, error) {
	var headers map[string]string
	if idempotencyKey != "" {
		headers = map[string]string{"Idempotency-Key": idempotencyKey}
	}
	var out Command
	if _, err := c.do(ctx, call{method: "POST", path: path, headers: headers, body: body, out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}

// GetCommand reads one command as it is now. Needs scope commands:read.
func (c *Client) GetCommand(ctx context.Context, id string) (*Command, error) {
	var out Command
	if _, err := c.do(ctx, call{method: "GET", path: "/v1/commands/" + pathID(id), out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}

// ListCommandsOptions filter an instance's commands.
type ListCommandsOptions struct {
	// Statuses: any of the Command* constants.
	Statuses []string
	// Page counts from 1 (0 = the first); PerPage is 1–200 (0 = 50).
	Page    int
	PerPage int
}

func (o ListCommandsOptions) query() url.Values {
	q := url.Values{}
	if len(o.Statuses) > 0 {
		q.Set("status", strings.Join(o.Statuses, ","))
	}
	if o.Page > 0 {
		q.Set("pagina", strconv.Itoa(o.Page))
	}
	if o.PerPage > 0 {
		q.Set("por_pagina", strconv.Itoa(o.PerPage))
	}
	return q
}

// ListCommands lists an instance's commands, newest first. Needs scope
// commands:read.
func (c *Client) ListCommands(ctx context.Context, instanceID string, opts ListCommandsOptions) (*CommandList, error) {
	var out CommandList
	_, err := c.do(ctx, call{
		method: "GET", path: "/v1/instances/" + pathID(instanceID) + "/commands",
		query: opts.query(), out: &out,
	})
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// CancelCommand cancels a command while aceptado or en_cola and returns it,
// cancelado; once an executor took it (or it ended) Motor answers 409: it
// may have had an effect. Needs scope commands:write.
func (c *Client) CancelCommand(ctx context.Context, id string) (*Command, error) {
	var out Command
	if _, err := c.do(ctx, call{method: "POST", path: "/v1/commands/" + pathID(id) + "/cancel", out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}
