package systemtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"testing"

	motor "github.com/motor-whatsapp/motor/sdks/go"
)

func appendN(t *testing.T, instance string, n int, eventType func(i int) string) {
	t.Helper()
	events := make([]motor.NewEvent, n)
	for i := range events {
		events[i] = motor.NewEvent{Type: eventType(i), Data: map[string]int{"i": i}}
	}
	if _, err := client(t).AppendBatch(ctx(t), instance, events, nil); err != nil {
		t.Fatal(err)
	}
}

func TestWalkEventsPagesTheLedger(t *testing.T) {
	c, instance := client(t), newInstance(t)
	appendN(t, instance, 25, func(i int) string { return []string{"even", "odd"}[i%2] })

	page, err := c.ListEvents(ctx(t), instance, motor.ListEventsOptions{AfterSeq: 20, Limit: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Events) != 3 || page.Events[0].Seq != 21 || page.NextAfterSeq != 23 || !page.HasMore {
		t.Fatalf("page after 20: %d events, next %d, more %v", len(page.Events), page.NextAfterSeq, page.HasMore)
	}

	var seqs []int64
	cursor, err := c.WalkEvents(ctx(t), instance, motor.ListEventsOptions{Limit: 7}, func(e motor.Envelope) error {
		seqs = append(seqs, e.Seq)
		return nil
	})
	if err != nil || cursor != 25 || len(seqs) != 25 {
		t.Fatalf("walk: %v, cursor %d, %d events", err, cursor, len(seqs))
	}
	for i, s := range seqs {
		if s != int64(i+1) {
			t.Fatalf("event %d has seq %d", i, s)
		}
	}
	// Resuming from the cursor finds nothing new, then what is appended.
	appendN(t, instance, 2, func(int) string { return "odd" })
	var odd []int64
	cursor, err = c.WalkEvents(ctx(t), instance, motor.ListEventsOptions{AfterSeq: 20, Types: []string{"odd"}, Limit: 2}, func(e motor.Envelope) error {
		odd = append(odd, e.Seq)
		return nil
	})
	if err != nil || fmt.Sprint(odd) != "[22 24 26 27]" {
		t.Fatalf("odd after 20: %v %v", err, odd)
	}
	// A failing callback stops the walk at the last event it accepted.
	stop := errors.New("stop")
	cursor, err = c.WalkEvents(ctx(t), instance, motor.ListEventsOptions{Limit: 4}, func(e motor.Envelope) error {
		if e.Seq == 6 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || cursor != 5 {
		t.Fatalf("stopped walk: %v, cursor %d", err, cursor)
	}
	_, err = c.ListEvents(ctx(t), instance, motor.ListEventsOptions{Limit: 501})
	if e := apiError(t, err); e.Code != motor.CodeValidation || e.Field != "query.limit" {
		t.Fatalf("limit 501: %+v", e)
	}
}

// cuttable is an HTTP client whose connections the test can cut, and
// which tells when a stream's answer arrived.
type cuttable struct {
	mu      sync.Mutex
	conns   []net.Conn
	dials   int
	answers chan int
}

func newCuttable() (*cuttable, *http.Client) {
	k := &cuttable{answers: make(chan int, 16)}
	transport := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err == nil {
			k.mu.Lock()
			k.conns = append(k.conns, conn)
			k.dials++
			k.mu.Unlock()
		}
		return conn, err
	}}
	return k, &http.Client{Transport: roundTrip(func(r *http.Request) (*http.Response, error) {
		res, err := transport.RoundTrip(r)
		if err == nil {
			select {
			case k.answers <- res.StatusCode:
			default: // nobody is listening any more
			}
		}
		return res, err
	})}
}

type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func (k *cuttable) cut() {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, c := range k.conns {
		c.Close()
	}
	k.conns = nil
}

func (k *cuttable) dialed() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.dials
}

func TestStreamResumesAfterACutWithNoGapOrDuplicate(t *testing.T) {
	instance := newInstance(t)
	appendN(t, instance, 3, func(int) string { return "x" })
	cuts, httpClient := newCuttable()
	c, err := motor.NewClient(env.url, env.token, motor.WithHTTPClient(httpClient))
	if err != nil {
		t.Fatal(err)
	}
	from := int64(0)
	s := c.Stream(ctx(t), instance, motor.StreamOptions{After: &from})
	defer s.Close()
	var seqs []int64
	for len(seqs) < 3 && s.Next() {
		seqs = append(seqs, s.Event().Seq)
	}
	if fmt.Sprint(seqs) != "[1 2 3]" {
		t.Fatalf("catch-up: %v (%v)", seqs, s.Err())
	}
	// Cut the connection, then append: the stream reconnects after 3.
	cuts.cut()
	appendN(t, instance, 3, func(int) string { return "x" })
	for len(seqs) < 6 && s.Next() {
		seqs = append(seqs, s.Event().Seq)
	}
	if fmt.Sprint(seqs) != "[1 2 3 4 5 6]" {
		t.Fatalf("after the cut: %v (%v)", seqs, s.Err())
	}
	if cuts.dialed() < 2 {
		t.Fatalf("the stream did not reconnect (%d connections)", cuts.dialed())
	}
	if cursor, ok := s.Cursor(); !ok || cursor != 6 {
		t.Fatalf("cursor %d %v", cursor, ok)
	}
}

func TestStreamWithoutCursorStartsAtTheEndAndFiltersTypes(t *testing.T) {
	instance := newInstance(t)
	appendN(t, instance, 2, func(int) string { return "old" })
	cuts, httpClient := newCuttable()
	c, _ := motor.NewClient(env.url, env.token, motor.WithHTTPClient(httpClient))
	// The stream belongs to the goroutine that reads it; the test's
	// context, cancelled when the test ends, stops it.
	s := c.Stream(ctx(t), instance, motor.StreamOptions{Types: []string{"wanted"}})
	got := make(chan motor.Envelope, 4)
	go func() {
		defer s.Close()
		for s.Next() {
			got <- s.Event()
		}
		close(got)
	}()
	// Append only once the stream answered: what came before is not sent.
	if status := <-cuts.answers; status != http.StatusOK {
		t.Fatalf("stream answered %d", status)
	}
	appendN(t, instance, 3, func(i int) string { return []string{"other", "wanted", "other"}[i] })
	e, ok := <-got
	if !ok || e.Seq != 4 || e.Type != "wanted" {
		t.Fatalf("first event: %+v %v (%v)", e, ok, s.Err())
	}
}

func TestStreamCursorExpiredIsExplicitAndRestartable(t *testing.T) {
	instance := newInstance(t)
	appendN(t, instance, 5, func(int) string { return "x" })
	// Events 1–3 were received 1,000 hours ago: past the 72 h window.
	db := database(t, "public")
	if _, err := db.Exec(`UPDATE events SET recibido_en = now() - interval '1000 hours' WHERE instance_id = $1 AND seq <= 3`, instance); err != nil {
		t.Fatal(err)
	}
	from := int64(1)
	s := client(t).Stream(ctx(t), instance, motor.StreamOptions{After: &from})
	defer s.Close()
	if s.Next() {
		t.Fatalf("an expired cursor streamed %+v", s.Event())
	}
	var expired *motor.CursorExpiredError
	if !errors.As(s.Err(), &expired) || expired.FirstCursor != 3 || expired.Code != motor.CodeCursorExpired || expired.Status != http.StatusGone {
		t.Fatalf("want a CursorExpiredError at 3, got %#v", s.Err())
	}
	// The caller decides: here, read the gap from the ledger, then restart.
	page, err := client(t).ListEvents(ctx(t), instance, motor.ListEventsOptions{AfterSeq: from, Limit: int(expired.FirstCursor - from)})
	if err != nil || len(page.Events) != 2 || page.Events[1].Seq != 3 {
		t.Fatalf("the gap from the ledger: %v %+v", err, page)
	}
	s.RestartAt(expired.FirstCursor)
	var seqs []int64
	for len(seqs) < 2 && s.Next() {
		seqs = append(seqs, s.Event().Seq)
	}
	if fmt.Sprint(seqs) != "[4 5]" {
		t.Fatalf("after the restart: %v (%v)", seqs, s.Err())
	}
}
