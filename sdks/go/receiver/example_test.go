package receiver_test

import (
	"context"
	"database/sql"
	"log"
	"net/http"
	"os"

	"github.com/motor-whatsapp/motor/sdks/go/receiver"
)

// The README's receiver; compiled with the tests so it cannot drift (it
// needs a database and Motor, so it does not run). The *sql.DB is
// Postgres through any driver (lib/pq, pgx's stdlib), registered by the
// program.
func Example() {
	db, err := sql.Open("postgres", os.Getenv("DATABASE_URL"))
	if err != nil {
		log.Fatal(err)
	}
	v, err := receiver.NewVerifier(receiver.MwV1, receiver.Secret{KeyID: os.Getenv("MOTOR_KEY_ID"), Value: os.Getenv("MOTOR_WEBHOOK_SECRET")})
	if err != nil {
		log.Fatal(err)
	}
	inbox := receiver.NewInbox(db, "crm")
	if err := inbox.Create(context.Background()); err != nil {
		log.Fatal(err)
	}
	http.Handle("/webhooks/motor", v.Handler(func(w http.ResponseWriter, r *http.Request, hook *receiver.Webhook) {
		e := hook.Envelope
		w.WriteHeader(receiver.Status(inbox.Receive(r.Context(), e, func(ctx context.Context, tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, "INSERT INTO messages (event_id, data) VALUES ($1, $2)", e.EventID, string(e.Data))
			return err
		})))
	}))
	log.Fatal(http.ListenAndServe("127.0.0.1:8090", nil))
}
