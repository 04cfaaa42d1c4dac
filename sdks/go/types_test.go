package motor

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

func TestRedacted(t *testing.T) {
	for data, want := range map[string]bool{
		`{"motivo":"retencion","redactado":true}`:       true,
		`{"redactado":true,"motivo":"retencion"}`:       true,
		`{"motivo":"retencion","redactado":false}`:      false,
		`{"motivo":"retencion","redactado":true,"x":1}`: false,
		`{"texto":"hola"}`:                              false,
		`[1]`:                                           false,
	} {
		e := Envelope{Data: json.RawMessage(data)}
		if e.Redacted() != want {
			t.Errorf("%s: %v", data, !want)
		}
	}
}

func TestUpdateSubscriptionSendsOnlyWhatIsSet(t *testing.T) {
	name, version := "crm", int64(3)
	cases := []struct {
		change UpdateSubscription
		want   string
	}{
		{UpdateSubscription{}, `{}`},
		{UpdateSubscription{Name: &name, ExpectedVersion: &version}, `{"nombre":"crm","version_esperada":3}`},
		{UpdateSubscription{RemoveCredentials: true, RemoveMaxPerSecond: true}, `{"credenciales":null,"max_por_segundo":null}`},
		{UpdateSubscription{Types: &[]string{}}, `{"tipos":[]}`},
	}
	for _, c := range cases {
		raw, err := json.Marshal(c.change)
		if err != nil || string(raw) != c.want {
			t.Errorf("%+v: %s %v, want %s", c.change, raw, err, c.want)
		}
	}
}

func TestSecretsDoNotPrint(t *testing.T) {
	s := SubscriptionWithSecret{Secret: Secret{KeyID: "whk_1", Value: "whsec_topsecret"}}
	for _, format := range []string{"%v", "%+v", "%#v", "%s"} {
		if printed := fmt.Sprintf(format, s); strings.Contains(printed, "topsecret") {
			t.Errorf("%s prints the secret: %s", format, printed)
		}
	}
}

func TestAPIErrorText(t *testing.T) {
	err := error(&CursorExpiredError{APIError: &APIError{Status: 410, Code: CodeCursorExpired, Message: "old"}, FirstCursor: 7})
	if ErrorCode(err) != CodeCursorExpired || !strings.Contains(err.Error(), "primer_cursor 7") {
		t.Fatalf("%v", err)
	}
	withField := &APIError{Status: 422, Code: CodeValidation, Field: "body.url", Message: "bad"}
	if withField.Error() != "motor: 422 validacion (body.url): bad" {
		t.Fatalf("%q", withField.Error())
	}
	if ErrorCode(fmt.Errorf("plain")) != "" {
		t.Fatal("a plain error has a code")
	}
}

func TestEndpointsKeepTheBasePathAndEscapeIDs(t *testing.T) {
	c, err := NewClient("https://motor.example.com/api/", "tok")
	if err != nil {
		t.Fatal(err)
	}
	got := c.endpoint("/v1/subscriptions/"+pathID("a/b c"), nil)
	if got != "https://motor.example.com/api/v1/subscriptions/a%2Fb%20c" {
		t.Fatalf("%s", got)
	}
	for _, bad := range []string{"ftp://x", "::", ""} {
		if _, err := NewClient(bad, "tok"); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if _, err := NewClient("http://x", ""); err == nil {
		t.Error("an empty token accepted")
	}
}
