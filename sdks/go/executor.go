package motor

import (
	"context"
	"net/url"
	"strconv"
	"time"
)

// The executor's calls (docs/COMMANDS.md, "Executors"): an executor is
// the adapter that runs commands against the provider. Its loop is
// PollCommands → ClaimCommand → run it (HeartbeatCommand while it runs
// long) → ReportCommand under the claim's lease. They need scope
// commands:execute.

// PendingCommand is a claimable command as the long-poll answers it:
// claim it for its content.
type PendingCommand struct {
	CommandID  string `json:"command_id"`
	InstanceID string `json:"instance_id"`
	Kind       string `json:"tipo"`
	// NextTry is when it became claimable; nil for an aceptado command.
	NextTry *time.Time `json:"next_try"`
}

// pendingCommands is the long-poll's answer.
type pendingCommands struct {
	Commands []PendingCommand `json:"commands"`
}

// PollOptions shape a long-poll.
type PollOptions struct {
	// Wait is how long to wait for a command, whole seconds 0–30 (0 =
	// answer at once).
	Wait time.Duration
	// Limit is 1–100 (0 = Motor's default, 10).
	Limit int
}

// PollCommands answers the instance's claimable commands in acceptance
// order, waiting up to opts.Wait for one to appear; empty when none did.
// Answering is not claiming: another executor may claim one first (409).
func (c *Client) PollCommands(ctx context.Context, instanceID string, opts PollOptions) ([]PendingCommand, error) {
	q := url.Values{"instance": {instanceID}}
	if opts.Wait > 0 {
		q.Set("wait", strconv.Itoa(int(opts.Wait/time.Second)))
	}
	if opts.Limit > 0 {
		q.Set("limit", strconv.Itoa(opts.Limit))
	}
	var out pendingCommands
	if _, err := c.do(ctx, call{method: "GET", path: "/v1/executor/commands", query: q, out: &out}); err != nil {
		return nil, err
	}
	return out.Commands, nil
}

// ExecutorCommand is a command with everything an executor needs to run it.
type ExecutorCommand struct {
	Command
	// Claims is how many times an executor claimed it (`reclamos`).
	Claims int `json:"reclamos"`
	// LeaseUntil is the current lease's end while ejecutando.
	LeaseUntil *time.Time `json:"reservado_hasta"`
}

// ClaimedCommand is a claim's answer: the command, now ejecutando, and
// its lease.
type ClaimedCommand struct {
	// Lease (`reserva`) goes in the report as Report.Lease.
	Lease string `json:"reserva"`
	// LeaseUntil: report before it, or the command ends ambiguo
	// (reserva_vencida).
	LeaseUntil time.Time       `json:"reservado_hasta"`
	Command    ExecutorCommand `json:"comando"`
}

// ClaimCommand takes a command (aceptado or en_cola → ejecutando). A
// command already claimed, finished, cancelled, not yet due, expired or
// for another generation is a 409.
func (c *Client) ClaimCommand(ctx context.Context, id string) (*ClaimedCommand, error) {
	var out ClaimedCommand
	if _, err := c.do(ctx, call{method: "POST", path: "/v1/executor/commands/" + pathID(id) + "/claim", out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}

// heartbeat is a heartbeat's body (LatidoComando).
type heartbeat struct {
	Lease string `json:"reserva"`
}

// HeartbeatCommand extends a claimed command's lease (the claim's
// ClaimedCommand.Lease) while the provider call runs long: the lease then
// ends one lease length from now, never sooner than before. Send it
// before LeaseUntil, every third of the lease or so. A 409 means the
// lease is lost (another claim, a report, or the sweeper made the command
// ambiguo): stop and do not report. Returns the command, LeaseUntil its
// lease's new end.
func (c *Client) HeartbeatCommand(ctx context.Context, id, lease string) (*ExecutorCommand, error) {
	var out ExecutorCommand
	if _, err := c.do(ctx, call{method: "POST", path: "/v1/executor/commands/" + pathID(id) + "/heartbeat", body: heartbeat{Lease: lease}, out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}

// Report is an executor's report of a command's outcome. Which fields
// go with which Status: CommandSent (sends: ProviderMessageID, Chat,
// AcceptedAt), CommandCompleted (every other kind), CommandFailed
// (ErrorCode, Stage previa/servidor, ServerCode with servidor, optional
// ProviderMessageID), CommandAmbiguous (optional ErrorCode, Stage
// frontera), CommandQueued (a deferral: NextTry). A field the status does
// not take is a 422 naming it.
type Report struct {
	// Lease is the claim's ClaimedCommand.Lease.
	Lease             string    `json:"reserva"`
	Status            string    `json:"status"`
	ProviderMessageID string    `json:"provider_message_id,omitempty"`
	Chat              string    `json:"chat,omitempty"`
	AcceptedAt        time.Time `json:"-"`
	ErrorCode         string    `json:"error_code,omitempty"`
	Stage             string    `json:"stage,omitempty"`
	ServerCode        string    `json:"server_code,omitempty"`
	NextTry           time.Time `json:"-"`
}

// reportWire is Report on the wire (ReporteComando): times as RFC 3339,
// absent when zero.
type reportWire struct {
	Report
	AcceptedAt *string `json:"aceptado_en,omitempty"`
	NextTry    *string `json:"next_try,omitempty"`
}

func rfc3339(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	s := t.UTC().Format(time.RFC3339Nano)
	return &s
}

// ReportCommand records a claimed command's outcome under its lease and
// returns the command as it is now. A lost lease, or a command no longer
// ejecutando, is a 409.
func (c *Client) ReportCommand(ctx context.Context, id string, r Report) (*ExecutorCommand, error) {
	body := reportWire{Report: r, AcceptedAt: rfc3339(r.AcceptedAt), NextTry: rfc3339(r.NextTry)}
	var out ExecutorCommand
	if _, err := c.do(ctx, call{method: "POST", path: "/v1/executor/commands/" + pathID(id) + "/report", body: body, out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}

// StateReport is an instance's connection state as its executor saw it
// change.
type StateReport struct {
	// State: vinculando, conectada, desconectada, pausada, desvinculada
	// or archivada.
	State string `json:"estado"`
	// Relinked: the instance was linked again (only with conectada);
	// bumps its generation.
	Relinked bool `json:"revinculada,omitempty"`
	// Reason: 1–300 characters, optional.
	Reason string `json:"motivo,omitempty"`
	// CommandID: the control command whose effect this is, optional.
	CommandID string `json:"command_id,omitempty"`
}

// InstanceState is what a state report did.
type InstanceState struct {
	InstanceID string `json:"instance_id"`
	State      string `json:"estado"`
	// PreviousState is nil when none had been reported.
	PreviousState *string `json:"estado_anterior"`
	Generation    int64   `json:"generation"`
	// Seq is the state.changed event's; nil when nothing changed.
	Seq *int64 `json:"seq"`
}

// ReportState records an instance's connection state (a state.changed
// event when it changed).
func (c *Client) ReportState(ctx context.Context, instanceID string, r StateReport) (*InstanceState, error) {
	var out InstanceState
	if _, err := c.do(ctx, call{method: "POST", path: "/v1/executor/instances/" + pathID(instanceID) + "/state", body: r, out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}
