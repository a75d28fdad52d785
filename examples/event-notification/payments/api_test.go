package payments_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/lerianstudio/streaming-hub/examples/event-notification/internal/testenv"
	"github.com/lerianstudio/streaming-hub/examples/event-notification/payments"
)

func do(t *testing.T, method, url, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// The API's status codes, and that a 409 leaves the stream untouched.
func TestAPICommandsAnswerStatusByState(t *testing.T) {
	t.Parallel()
	rdb, keys := testenv.Redis(t)
	api := testenv.StartAPI(t, testenv.NewStore(t, rdb, keys))

	code, body := do(t, "POST", api.URL+"/payments",
		`{"amountCents":15000,"currency":"BRL","payerAccount":"0001-1","payeeAccount":"0002-2"}`)
	if code != http.StatusCreated {
		t.Fatalf("create: %d %s", code, body)
	}
	var p payments.Payment
	if err := json.Unmarshal(body, &p); err != nil {
		t.Fatal(err)
	}
	if p.Status != payments.StatusPending || p.Version != 1 || p.AmountCents != 15000 {
		t.Fatalf("created %+v", p)
	}
	base := api.URL + "/payments/" + p.ID
	streamLen := func() int64 { return rdb.XLen(t.Context(), keys.Stream()).Val() }

	steps := []struct {
		method, url, body string
		want              int
		wantEntries       int64
	}{
		{"POST", api.URL + "/payments", `{"amountCents":-1,"currency":"BRL","payerAccount":"a","payeeAccount":"b"}`, 400, 1},
		{"POST", api.URL + "/payments", `{"amountCents":1,"currency":"BRL","payerAccount":"a","payeeAccount":"b","status":"approved"}`, 400, 1},
		{"POST", base + "/refund", "", 409, 1}, // refund of an unapproved payment
		{"POST", base + "/approve", "", 200, 2},
		{"POST", base + "/approve", "", 409, 2}, // approve twice
		{"GET", base, "", 200, 2},
		{"POST", base + "/refund", "", 200, 3},
		{"POST", base + "/refund", "", 409, 3},
		{"GET", api.URL + "/payments/" + uuid.NewString(), "", 404, 3},
		{"GET", api.URL + "/payments/not-a-uuid", "", 404, 3},
		{"POST", api.URL + "/payments/" + uuid.NewString() + "/refund", "", 404, 3},
		{"DELETE", base, "", 204, 4},
		{"GET", base, "", 404, 4},
		{"DELETE", base, "", 404, 4},
	}
	for _, s := range steps {
		code, body := do(t, s.method, s.url, s.body)
		if code != s.want {
			t.Fatalf("%s %s: %d %s, want %d", s.method, s.url, code, body, s.want)
		}
		if n := streamLen(); n != s.wantEntries {
			t.Fatalf("after %s %s: %d stream entries, want %d", s.method, s.url, n, s.wantEntries)
		}
	}
	if n := api.Requests.Count(); n != int64(len(steps)+1) {
		t.Fatalf("request counter %d, want %d", n, len(steps)+1)
	}
}
