package motor_test

import (
	"context"
	"errors"
	"log"
	"os"

	motor "github.com/motor-whatsapp/motor/sdks/go"
)

// The README's producer and reader example; compiled with the tests so it
// cannot drift from the API (it needs a Motor, so it does not run).
func Example() {
	ctx := context.Background()
	instanceID, saved := os.Getenv("MOTOR_INSTANCE_ID"), int64(0)
	c, err := motor.NewClient("http://127.0.0.1:8080", os.Getenv("MOTOR_TOKEN"))
	if err != nil {
		log.Fatal(err)
	}
	_, err = c.Append(ctx, instanceID, motor.NewEvent{Type: "message.sent", Data: map[string]string{"texto": "hola"}},
		&motor.AppendOptions{IdempotencyKey: "order-42"})
	var apiErr *motor.APIError
	if errors.As(err, &apiErr) {
		log.Printf("%d %s on %s", apiErr.Status, apiErr.Code, apiErr.Field)
	}
	cursor, err := c.WalkEvents(ctx, instanceID, motor.ListEventsOptions{AfterSeq: saved}, func(e motor.Envelope) error {
		log.Println(e.Seq, e.Type)
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	s := c.Stream(ctx, instanceID, motor.StreamOptions{After: &cursor})
	defer s.Close()
	for s.Next() {
		log.Println(s.Event().Seq)
	}
	var expired *motor.CursorExpiredError
	if errors.As(s.Err(), &expired) {
		// Read the gap with WalkEvents, or accept it; then:
		s.RestartAt(expired.FirstCursor)
	}
}
