package systemtest

import (
	"context"
	"database/sql"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"

	motor "github.com/motor-whatsapp/motor/sdks/go"
	"github.com/motor-whatsapp/motor/sdks/go/receiver"
)

// inboxDB is the receiver's own database: a schema of the sandbox's
// Postgres with the inbox and the table its effect writes.
func inboxDB(t *testing.T, schema string) (*sql.DB, *receiver.Inbox) {
	db := database(t, schema)
	inbox := receiver.NewInbox(db, "go-tests")
	if err := inbox.Create(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE IF NOT EXISTS messages (event_id uuid PRIMARY KEY, seq bigint NOT NULL, data text NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	return db, inbox
}

func count(t *testing.T, db *sql.DB, query string, args ...any) int {
	t.Helper()
	var n int
	if err := db.QueryRow(query, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func insertMessage(e *motor.Envelope) func(context.Context, *sql.Tx) error {
	return func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO messages (event_id, seq, data) VALUES ($1, $2, $3)`, e.EventID, e.Seq, string(e.Data))
		return err
	}
}

// TestInboxAppliesEachEventOnce: a receiver on the SDK (Handler, then the
// inbox in the effect's transaction) under real deliveries, a failed
// effect that Motor retries, and a replay that sends every event again.
func TestInboxAppliesEachEventOnce(t *testing.T) {
	c, instance := client(t), newInstance(t)
	db, inbox := inboxDB(t, "go_inbox_deliveries")
	var failedOnce atomic.Bool
	var mu sync.Mutex
	outcomes := map[receiver.Outcome]int{}
	var verifierRef atomic.Pointer[receiver.Verifier]
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		verifierRef.Load().Handler(func(w http.ResponseWriter, r *http.Request, hook *receiver.Webhook) {
			e := hook.Envelope
			outcome, err := inbox.Receive(r.Context(), e, func(ctx context.Context, tx *sql.Tx) error {
				if err := insertMessage(e)(ctx, tx); err != nil {
					return err
				}
				if e.Seq == 2 && failedOnce.CompareAndSwap(false, true) {
					return errors.New("the effect fails once, after its write")
				}
				return nil
			})
			if err == nil {
				mu.Lock()
				outcomes[outcome]++
				mu.Unlock()
			}
			w.WriteHeader(receiver.Status(outcome, err))
		}).ServeHTTP(w, r)
	}))
	t.Cleanup(server.Close)
	created := subscribe(t, server.URL+"/inbox", instance, motor.SigningMwV1)
	verifierRef.Store(verifier(t, receiver.MwV1, receiver.Secret{KeyID: created.Secret.KeyID, Value: created.Secret.Value}))

	for i := 1; i <= 3; i++ {
		appendOne(t, instance, "message.received", map[string]int{"i": i})
	}
	applied := func() int {
		mu.Lock()
		defer mu.Unlock()
		return outcomes[receiver.Applied]
	}
	waitFor(t, "three events applied (event 2 after Motor's retry)", func() bool { return applied() == 3 })
	if n := count(t, db, `SELECT count(*) FROM messages`); n != 3 {
		t.Fatalf("%d messages", n)
	}
	if n := count(t, db, `SELECT count(*) FROM motor_inbox WHERE client = 'go-tests' AND instance_id = $1`, instance); n != 3 {
		t.Fatalf("%d inbox rows", n)
	}
	// Motor records each outcome once the answer is back: wait for it.
	var list *motor.DeliveryList
	waitFor(t, "three deliveries entregada", func() bool {
		var err error
		list, err = c.ListDeliveries(ctx(t), motor.ListDeliveriesOptions{SubscriptionID: created.Subscription.ID, States: []string{motor.DeliveryDelivered}})
		if err != nil {
			t.Fatal(err)
		}
		return len(list.Deliveries) == 3
	})
	for _, d := range list.Deliveries {
		want := 1
		if d.Seq == 2 {
			want = 2 // the 500 after the rolled-back effect, then the retry
		}
		if d.Attempts != want || d.State != motor.DeliveryDelivered {
			t.Fatalf("delivery of seq %d: %d attempts, %s", d.Seq, d.Attempts, d.State)
		}
	}

	// A replay sends the three events again: each is a duplicate.
	if _, err := c.Replay(ctx(t), created.Subscription.ID, "go-inbox-replay", motor.ReplayRequest{InstanceID: instance, FromSeq: 1, ToSeq: 3, Reason: "go inbox test"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "three duplicates", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return outcomes[receiver.Duplicate] == 3
	})
	if n := count(t, db, `SELECT count(*) FROM messages`); n != 3 || applied() != 3 {
		t.Fatalf("%d messages, %d applied after the replay", n, applied())
	}
}

func TestInboxConcurrentAndFailedEffects(t *testing.T) {
	instance := newInstance(t)
	db, inbox := inboxDB(t, "go_inbox_direct")
	e := appendOne(t, instance, "message.received", map[string]string{"texto": "uno"})

	// An effect that fails keeps nothing: no inbox row, no message.
	outcome, err := inbox.Receive(ctx(t), e, func(context.Context, *sql.Tx) error { return errors.New("down") })
	if err == nil || receiver.Status(outcome, err) != http.StatusInternalServerError {
		t.Fatalf("failed effect: %v %v", outcome, err)
	}
	if n := count(t, db, `SELECT count(*) FROM motor_inbox WHERE event_id = $1`, e.EventID); n != 0 {
		t.Fatalf("a failed effect left %d inbox rows", n)
	}

	// Two deliveries of one event at once: one applies, one is a duplicate.
	var wg sync.WaitGroup
	results := make(chan receiver.Outcome, 2)
	for i := 0; i < 2; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outcome, err := inbox.Receive(ctx(t), e, insertMessage(e))
			if err != nil {
				t.Error(err)
			}
			results <- outcome
		}()
	}
	wg.Wait()
	close(results)
	got := map[receiver.Outcome]int{}
	for o := range results {
		got[o]++
	}
	if got[receiver.Applied] != 1 || got[receiver.Duplicate] != 1 {
		t.Fatalf("outcomes %v", got)
	}
	if n := count(t, db, `SELECT count(*) FROM messages WHERE event_id = $1`, e.EventID); n != 1 {
		t.Fatalf("%d messages", n)
	}
	if status := receiver.Status(receiver.Duplicate, nil); status != http.StatusNoContent {
		t.Fatalf("a duplicate answers %d", status)
	}
	if _, err := inbox.Receive(ctx(t), &motor.Envelope{}, insertMessage(e)); err == nil {
		t.Fatal("an envelope without ids was accepted")
	}
}
