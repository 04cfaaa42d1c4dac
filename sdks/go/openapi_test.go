package motor

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
)

// The SDK's types are written by hand; this test keeps them in step with
// the API's generated OpenAPI document (schemas/openapi.json in Motor's
// repository): every operation outside the operator API is either called
// by the SDK or listed as left out, every object schema those operations
// reach has a Go type here, and each type's JSON fields are exactly the
// schema's properties. A field added to the API and not to the SDK fails.

// operations the SDK calls, by operationId.
var covered = map[string]string{
	"append_events":       "Append, AppendBatch",
	"list_events":         "ListEvents, WalkEvents",
	"get_stream":          "Stream",
	"create_subscription": "CreateSubscription",
	"list_subscriptions":  "ListSubscriptions",
	"get_subscription":    "GetSubscription",
	"update_subscription": "UpdateSubscription",
	"delete_subscription": "DeleteSubscription",
	"rotate_secret":       "RotateSecret",
	"send_test":           "TestSubscription",
	"request_replay":      "Replay",
	"list_deliveries":     "ListDeliveries",
	"get_delivery":        "GetDelivery",
	"retry_delivery":      "RetryDelivery",
	"send_message":        "SendMessage",
	"submit_command":      "SubmitCommand",
	"get_command":         "GetCommand",
	"list_commands":       "ListCommands",
	"cancel_command":      "CancelCommand",
	"check_subscription":  "CheckSubscription",
	"get_replay":          "GetReplay",
	"create_stream_token": "CreateStreamToken",
	"poll_commands":       "PollCommands",
	"claim_command":       "ClaimCommand",
	"report_command":      "ReportCommand",
	"heartbeat_command":   "HeartbeatCommand",
	"report_state":        "ReportState",
}

// leftOut are operations an application's SDK does not call.
var leftOut = map[string]string{
	"get_healthz":    "probe for orchestrators",
	"get_readyz":     "probe for orchestrators",
	"get_metrics":    "Prometheus scrape",
	"serve_document": "this document itself",
}

// schemaTypes maps each object schema to the Go type that carries it.
var schemaTypes = map[string]reflect.Type{
	"Envelope":               reflect.TypeOf(Envelope{}),
	"NewEvent":               reflect.TypeOf(NewEvent{}),
	"LedgerPage":             reflect.TypeOf(LedgerPage{}),
	"Subscription":           reflect.TypeOf(Subscription{}),
	"SubscriptionList":       reflect.TypeOf(subscriptionList{}),
	"Clave":                  reflect.TypeOf(SigningKey{}),
	"Secreto":                reflect.TypeOf(Secret{}),
	"SubscriptionWithSecret": reflect.TypeOf(SubscriptionWithSecret{}),
	"CreateSubscription":     reflect.TypeOf(CreateSubscription{}),
	"UpdateSubscription":     reflect.TypeOf(UpdateSubscription{}),
	"Credenciales":           reflect.TypeOf(Credentials{}),
	"TestResult":             reflect.TypeOf(TestResult{}),
	"Entrega":                reflect.TypeOf(Delivery{}),
	"EntregaDetalle":         reflect.TypeOf(DeliveryDetail{}),
	"EntregaList":            reflect.TypeOf(DeliveryList{}),
	"Intento":                reflect.TypeOf(Attempt{}),
	"CreateReplay":           reflect.TypeOf(ReplayRequest{}),
	"Replay":                 reflect.TypeOf(Replay{}),
	"CreateRetry":            reflect.TypeOf(retryRequest{}),
	"ErrorBody":              reflect.TypeOf(errorBody{}),
	"ErrorDetail":            reflect.TypeOf(errorDetail{}),
	"CursorExpired":          reflect.TypeOf(cursorExpiredBody{}),
	"Comando":                reflect.TypeOf(Command{}),
	"ComandoList":            reflect.TypeOf(CommandList{}),
	"NuevoMensaje":           reflect.TypeOf(messageRequest{}),
	"NuevoComando":           reflect.TypeOf(operationRequest{}),
	"CheckReport":            reflect.TypeOf(CheckReport{}),
	"CheckRow":               reflect.TypeOf(CheckRow{}),
	"CheckGot":               reflect.TypeOf(CheckGot{}),
	"CheckTimings":           reflect.TypeOf(CheckTimings{}),
	"ReplayStatus":           reflect.TypeOf(ReplayStatus{}),
	"CreateStreamToken":      reflect.TypeOf(createStreamToken{}),
	"StreamToken":            reflect.TypeOf(StreamToken{}),
	"ComandosPendientes":     reflect.TypeOf(pendingCommands{}),
	"ComandoPendiente":       reflect.TypeOf(PendingCommand{}),
	"ComandoReclamado":       reflect.TypeOf(ClaimedCommand{}),
	"ComandoEjecutor":        reflect.TypeOf(ExecutorCommand{}),
	"ReporteComando":         reflect.TypeOf(reportWire{}),
	"LatidoComando":          reflect.TypeOf(heartbeat{}),
	"ReporteEstado":          reflect.TypeOf(StateReport{}),
	"EstadoInstancia":        reflect.TypeOf(InstanceState{}),
}

// notJSON are object schemas that are not JSON bodies the SDK decodes.
var notJSON = map[string]string{
	"SseMessage": "the stream's text/event-stream framing, parsed by Stream",
}

type schema struct {
	Ref        string             `json:"$ref,omitempty"`
	Type       any                `json:"type,omitempty"`
	Properties map[string]*schema `json:"properties,omitempty"`
	Items      *schema            `json:"items,omitempty"`
	AllOf      []*schema          `json:"allOf,omitempty"`
	OneOf      []*schema          `json:"oneOf,omitempty"`
}

type document struct {
	Paths      map[string]map[string]json.RawMessage `json:"paths"`
	Components struct {
		Schemas map[string]*schema `json:"schemas"`
	} `json:"components"`
}

func loadDocument(t *testing.T) *document {
	path := os.Getenv("MOTOR_OPENAPI")
	if path == "" {
		path = filepath.Join("..", "..", "schemas", "openapi.json")
		if _, err := os.Stat(path); err != nil {
			t.Skip("schemas/openapi.json is not beside this module (outside Motor's repository); set MOTOR_OPENAPI")
		}
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc document
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	return &doc
}

// refs collects the schema names that raw (any JSON) refers to.
func refs(raw any, into map[string]bool) {
	switch v := raw.(type) {
	case map[string]any:
		for k, x := range v {
			if s, ok := x.(string); ok && k == "$ref" {
				into[strings.TrimPrefix(s, "#/components/schemas/")] = true
			}
			refs(x, into)
		}
	case []any:
		for _, x := range v {
			refs(x, into)
		}
	}
}

// properties is the union of a schema's properties, through allOf and
// its $refs, and through oneOf's inline alternatives (CreateReplay's two
// forms); a oneOf of other schemas (EventsInput) is not an object itself.
func properties(doc *document, s *schema, into map[string]bool) {
	if s == nil {
		return
	}
	if s.Ref != "" {
		properties(doc, doc.Components.Schemas[strings.TrimPrefix(s.Ref, "#/components/schemas/")], into)
	}
	for name := range s.Properties {
		into[name] = true
	}
	for _, part := range s.AllOf {
		properties(doc, part, into)
	}
	for _, part := range s.OneOf {
		if part.Ref == "" {
			properties(doc, part, into)
		}
	}
}

// jsonFields is the JSON names of t's fields, embedded structs flattened.
func jsonFields(t reflect.Type, into map[string]bool) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if f.Anonymous && tag == "" {
			jsonFields(f.Type, into)
			continue
		}
		name := strings.Split(tag, ",")[0]
		if name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		into[name] = true
	}
}

func TestOperationsAreCoveredOrLeftOut(t *testing.T) {
	doc := loadDocument(t)
	for path, ops := range doc.Paths {
		for method, raw := range ops {
			var op struct {
				ID string `json:"operationId"`
			}
			if json.Unmarshal(raw, &op) != nil || op.ID == "" {
				continue
			}
			if strings.HasPrefix(path, "/v1/admin/") {
				continue // the operator API: Motor's operators, not applications
			}
			if covered[op.ID] == "" && leftOut[op.ID] == "" {
				t.Errorf("%s %s (%s) is new: call it from the SDK or list it in leftOut", strings.ToUpper(method), path, op.ID)
			}
		}
	}
}

func TestTypesMatchTheSchemas(t *testing.T) {
	doc := loadDocument(t)
	reached := map[string]bool{}
	for path, ops := range doc.Paths {
		if strings.HasPrefix(path, "/v1/admin/") {
			continue
		}
		for _, raw := range ops {
			var v any
			if json.Unmarshal(raw, &v) != nil {
				continue
			}
			if op, ok := v.(map[string]any); ok {
				if id, _ := op["operationId"].(string); leftOut[id] != "" {
					continue
				}
			}
			refs(v, reached)
		}
	}
	// Follow references inside schemas until nothing new is reached.
	for grew := true; grew; {
		grew = false
		for name := range reached {
			raw, _ := json.Marshal(doc.Components.Schemas[name])
			var v any
			_ = json.Unmarshal(raw, &v)
			more := map[string]bool{}
			refs(v, more)
			for m := range more {
				if !reached[m] {
					reached[m], grew = true, true
				}
			}
		}
	}
	names := make([]string, 0, len(reached))
	for name := range reached {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		s := doc.Components.Schemas[name]
		if s == nil {
			t.Errorf("schema %s is referenced but not defined", name)
			continue
		}
		want := map[string]bool{}
		properties(doc, s, want)
		if len(want) == 0 || notJSON[name] != "" {
			continue // a scalar, an enum, an array or a oneOf of other schemas
		}
		goType, ok := schemaTypes[name]
		if !ok {
			t.Errorf("schema %s (fields %v) has no Go type: add one and list it in schemaTypes", name, keys(want))
			continue
		}
		got := map[string]bool{}
		jsonFields(goType, got)
		for field := range want {
			if !got[field] {
				t.Errorf("%s: the API has %q, %s does not", name, field, goType.Name())
			}
		}
		for field := range got {
			if !want[field] {
				t.Errorf("%s: %s has %q, the API does not", name, goType.Name(), field)
			}
		}
	}
	for name := range schemaTypes {
		if !reached[name] {
			t.Errorf("schemaTypes lists %s, which no operation the SDK calls uses", name)
		}
	}
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
