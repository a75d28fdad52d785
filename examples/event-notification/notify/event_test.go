package notify_test

import (
	"strings"
	"testing"
	"time"

	"github.com/lerianstudio/streaming-hub/examples/event-notification/notify"
)

func TestDecodeRejectsDataCarryingPaymentFields(t *testing.T) {
	t.Parallel()
	base := `{"specversion":"1.0","id":"e1","source":"//lerian.studio/payments","type":"studio.lerian.payment.approved",` +
		`"time":"2026-11-30T12:00:00Z","subject":"p1","datacontenttype":"application/json","data":%s}`
	good := strings.Replace(base, "%s", `{"paymentId":"p1","version":2}`, 1)
	if _, d, err := notify.Decode([]byte(good)); err != nil || d.PaymentID != "p1" || d.Version != 2 {
		t.Fatalf("good event: %+v, %v", d, err)
	}
	bad := map[string]string{
		"extra payment field": `{"paymentId":"p1","version":2,"amountCents":15000}`,
		"no version":          `{"paymentId":"p1"}`,
		"version zero":        `{"paymentId":"p1","version":0}`,
		"subject mismatch":    `{"paymentId":"p2","version":2}`,
		"not an object":       `"p1"`,
	}
	for name, data := range bad {
		if _, _, err := notify.Decode([]byte(strings.Replace(base, "%s", data, 1))); err == nil {
			t.Errorf("%s: decoded, want an error", name)
		}
	}
	if _, _, err := notify.Decode([]byte(strings.Replace(good, `"1.0"`, `"0.3"`, 1))); err == nil {
		t.Error("specversion 0.3 decoded")
	}
}

func TestEnvelopeJSONHasNoData(t *testing.T) {
	t.Parallel()
	ev := notify.NewEnvelope(notify.DefaultSource, notify.TypePaymentApproved, "p1", time.Now())
	s, err := notify.EnvelopeJSON(ev)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(s, `"data"`) || !strings.HasPrefix(s, "{") || !strings.HasSuffix(s, "}") {
		t.Fatalf("envelope %s", s)
	}
	ev.Data = []byte(`{}`)
	if _, err := notify.EnvelopeJSON(ev); err == nil {
		t.Fatal("envelope with data accepted")
	}
}
