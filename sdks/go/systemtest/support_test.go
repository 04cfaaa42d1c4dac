package systemtest

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/lib/pq"

	motor "github.com/motor-whatsapp/motor/sdks/go"
)

// env is what sdks/motor-sandbox exported.
var env struct {
	url, token, adminToken, appID, instanceID, databaseURL string
}

func TestMain(m *testing.M) {
	env.url = os.Getenv("MOTOR_URL")
	env.token = os.Getenv("MOTOR_TOKEN")
	env.adminToken = os.Getenv("MOTOR_ADMIN_TOKEN")
	env.appID = os.Getenv("MOTOR_APP_ID")
	env.instanceID = os.Getenv("MOTOR_INSTANCE_ID")
	env.databaseURL = os.Getenv("MOTOR_DATABASE_URL")
	if env.url == "" || env.token == "" || env.adminToken == "" || env.appID == "" || env.databaseURL == "" {
		fmt.Fprintln(os.Stderr, "systemtest: run under sdks/motor-sandbox (sdks/go/test does): MOTOR_URL, MOTOR_TOKEN, MOTOR_ADMIN_TOKEN, MOTOR_APP_ID and MOTOR_DATABASE_URL are needed")
		os.Exit(2)
	}
	os.Exit(m.Run())
}

// deadline bounds every wait for something Motor does asynchronously.
const deadline = 20 * time.Second

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	t.Cleanup(cancel)
	return c
}

func client(t *testing.T) *motor.Client {
	return clientWith(t, env.token)
}

func clientWith(t *testing.T, token string) *motor.Client {
	c, err := motor.NewClient(env.url, token)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// admin calls Motor's operator API (not part of the SDK) and decodes the
// answer into out.
func admin(t *testing.T, method, path string, body, out any) {
	t.Helper()
	var reader io.Reader
	if body != nil {
		raw, _ := json.Marshal(body)
		reader = bytes.NewReader(raw)
	}
	req, _ := http.NewRequest(method, env.url+path, reader)
	req.Header.Set("Authorization", "Bearer "+env.adminToken)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	if res.StatusCode >= 300 {
		t.Fatalf("%s %s: %d %s", method, path, res.StatusCode, raw)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
	}
}

// newInstance is a fresh instance of the sandbox's app, so each test
// reads a ledger of its own.
func newInstance(t *testing.T) string {
	var out struct {
		ID string `json:"id"`
	}
	admin(t, "POST", "/v1/admin/apps/"+env.appID+"/instances", map[string]any{"nombre": "go-" + t.Name()}, &out)
	return out.ID
}

// newKey is a token of the sandbox's app with only these scopes.
func newKey(t *testing.T, scopes ...string) string {
	var out struct {
		Token string `json:"token"`
	}
	admin(t, "POST", "/v1/admin/apps/"+env.appID+"/keys", map[string]any{"nombre": "go-" + t.Name(), "scopes": scopes}, &out)
	return out.Token
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	end := time.Now().Add(deadline)
	for !cond() {
		if time.Now().After(end) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// captured is one request a receiver got, as it arrived.
type captured struct {
	header http.Header
	body   []byte
}

// sink is a real HTTP server on 127.0.0.1, port 0, that keeps every
// request and answers with answer (204 when nil).
type sink struct {
	server *httptest.Server
	mu     sync.Mutex
	got    []captured
	answer func(captured) int
}

func newSink(t *testing.T, answer func(captured) int) *sink {
	r := &sink{answer: answer}
	r.server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		c := captured{header: req.Header.Clone(), body: body}
		r.mu.Lock()
		r.got = append(r.got, c)
		answer := r.answer
		r.mu.Unlock()
		status := http.StatusNoContent
		if answer != nil {
			status = answer(c)
		}
		w.WriteHeader(status)
	}))
	t.Cleanup(r.server.Close)
	return r
}

// requests is a copy of what arrived so far.
func (r *sink) requests() []captured {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]captured(nil), r.got...)
}

// eventIDs of the requests whose body is an envelope of this event id.
func (r *sink) withEvent(eventID string) []captured {
	var out []captured
	for _, c := range r.requests() {
		var e motor.Envelope
		if json.Unmarshal(c.body, &e) == nil && e.EventID == eventID {
			out = append(out, c)
		}
	}
	return out
}

// subscribe creates a subscription to url for one instance.
func subscribe(t *testing.T, url, instance, signing string) *motor.SubscriptionWithSecret {
	sub, err := client(t).CreateSubscription(ctx(t), motor.CreateSubscription{
		Name: "go " + t.Name(), URL: url, Instances: []string{instance}, Signing: signing,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client(t).DeleteSubscription(context.Background(), sub.Subscription.ID) })
	return sub
}

func appendOne(t *testing.T, instance, eventType string, data any) *motor.Envelope {
	t.Helper()
	e, err := client(t).Append(ctx(t), instance, motor.NewEvent{Type: eventType, Data: data}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// database opens the sandbox's Postgres database with search_path set
// to a schema of the test's own (dropped with the database).
func database(t *testing.T, schema string) *sql.DB {
	url := env.databaseURL
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	db, err := sql.Open("postgres", url+sep+"sslmode=disable&search_path="+schema)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Exec("CREATE SCHEMA IF NOT EXISTS " + schema); err != nil {
		t.Fatal(err)
	}
	return db
}

func apiError(t *testing.T, err error) *motor.APIError {
	t.Helper()
	var apiErr *motor.APIError
	if !errors.As(err, &apiErr) {
		t.Fatalf("want an *motor.APIError, got %v", err)
	}
	return apiErr
}
