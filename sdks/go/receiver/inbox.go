package receiver

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/http"

	motor "github.com/motor-whatsapp/motor/sdks/go"
)

// InboxSchema is the table Inbox.Create makes (Postgres). Run it in a
// migration of your own if you prefer; the inbox needs these columns and
// the UNIQUE key.
const InboxSchema = `CREATE TABLE IF NOT EXISTS motor_inbox (
    client      text        NOT NULL,
    instance_id uuid        NOT NULL,
    event_id    uuid        NOT NULL,
    seq         bigint      NOT NULL,
    event_type  text        NOT NULL,
    received_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT motor_inbox_once UNIQUE (client, instance_id, event_id)
)`

const inboxClaim = `INSERT INTO motor_inbox (client, instance_id, event_id, seq, event_type)
VALUES ($1, $2, $3, $4, $5)
ON CONFLICT ON CONSTRAINT motor_inbox_once DO NOTHING`

// Inbox applies each event once: one row per (client, instance, event)
// under a UNIQUE key, written in the same transaction as the receiver's
// own effect. A retry, a replay or a second subscription of an event
// already applied finds the row and runs nothing; answer 2xx only after
// Receive returned, so an event Motor saw acknowledged is durably
// applied. It works on database/sql with a Postgres driver (lib/pq, pgx's
// stdlib): the statements use $n placeholders and ON CONFLICT.
type Inbox struct {
	db     *sql.DB
	client string
}

// Outcome is what became of one delivery.
type Outcome int

const (
	// Applied: first time; the effect ran and committed with the row.
	Applied Outcome = iota + 1
	// Duplicate: already in the inbox; nothing ran.
	Duplicate
)

func (o Outcome) String() string {
	switch o {
	case Applied:
		return "applied"
	case Duplicate:
		return "duplicate"
	}
	return "failed"
}

// NewInbox makes an inbox for one client: a name of your choosing (the
// subscription, or the system that consumes it) that keeps two consumers
// of the same events apart in one table.
func NewInbox(db *sql.DB, client string) *Inbox {
	return &Inbox{db: db, client: client}
}

// Create makes the table (InboxSchema) if it is not there.
func (i *Inbox) Create(ctx context.Context) error {
	_, err := i.db.ExecContext(ctx, InboxSchema)
	return err
}

// Receive runs effect once per event: in one transaction it claims the
// event's row and, when the row is new, runs effect on the same
// transaction and commits both. An error from effect or the database
// rolls everything back and is returned (answer 500: Motor retries).
// Concurrent deliveries of one event serialise on the UNIQUE key: the
// second waits for the first, then finds the row (or, if the first
// rolled back, applies the event itself).
func (i *Inbox) Receive(ctx context.Context, e *motor.Envelope, effect func(ctx context.Context, tx *sql.Tx) error) (Outcome, error) {
	if e == nil || e.EventID == "" || e.InstanceID == "" {
		return 0, errors.New("receiver: inbox: the envelope has no event_id or instance_id")
	}
	tx, err := i.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("receiver: inbox: %w", err)
	}
	// Rolling back after a commit is a no-op; this covers every early return.
	defer func() { _ = tx.Rollback() }()
	res, err := tx.ExecContext(ctx, inboxClaim, i.client, e.InstanceID, e.EventID, e.Seq, e.Type)
	if err != nil {
		return 0, fmt.Errorf("receiver: inbox: claiming the event: %w", err)
	}
	claimed, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("receiver: inbox: %w", err)
	}
	if claimed == 0 {
		return Duplicate, nil
	}
	if err := effect(ctx, tx); err != nil {
		return 0, fmt.Errorf("receiver: inbox: the effect failed: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("receiver: inbox: commit: %w", err)
	}
	return Applied, nil
}

// Status is what to answer Motor after Receive: 204 when the event is
// kept (applied now or before), 500 when it is not (Motor retries). It
// takes Receive's results as they are: Status(inbox.Receive(…)).
func Status(_ Outcome, err error) int {
	if err != nil {
		return http.StatusInternalServerError
	}
	return http.StatusNoContent
}
