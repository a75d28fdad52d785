package console

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
)

// newestEvents lists the tenant's events newest first, 50 a page.
func (c *Console) newestEvents(r *http.Request, s *session, before string) ([]m, string, error) {
	b, _ := strconv.ParseInt(before, 10, 64)
	data, err := c.deps.API.RecentEvents(r.Context(), s.Principal, s.Tenant, b, 51)
	if err != nil {
		code := hub.ErrorCode(err)
		status := map[string]int{hub.ENOTFOUND: 404, hub.EFORBIDDEN: 403, hub.EINVALID: 400}[code]
		if status == 0 {
			return nil, "", err
		}
		return nil, "", &apiError{Status: status, Code: code, Message: hub.ErrorMessage(err)}
	}
	var evs []m
	if err := json.Unmarshal(data, &evs); err != nil {
		return nil, "", err
	}
	next := ""
	if len(evs) > 50 {
		evs = evs[:50]
		next = num(evs[49]["sequence"])
	}
	return evs, next, nil
}

// form is what the create and edit forms show: the subscription (or what
// was typed), the catalog for the picker, and an error naming the field.
func (c *Console) subscriptionForm(w http.ResponseWriter, r *http.Request, s *session, status int, sub m, errMsg string) {
	var cat struct{ Data []m }
	if err := c.call(r, s, "GET", "/v1/event-types", nil, &cat); err != nil {
		c.fail(w, r, s, err)
		return
	}
	title := "New subscription"
	if sub["id"] != nil {
		title = "Edit " + str(sub["name"])
	}
	c.show(w, r, s, status, "subscription_form", "subscriptions", title, m{"Sub": sub, "Catalog": cat.Data, "Error": errMsg})
}

func (c *Console) newSubscription(w http.ResponseWriter, r *http.Request, s *session) {
	if !c.tenantReady(w, r, s, "subscriptions", "New subscription") {
		return
	}
	c.subscriptionForm(w, r, s, http.StatusOK, m{"enabled": true, "max_in_flight": float64(1)}, "")
}

func (c *Console) editSubscription(w http.ResponseWriter, r *http.Request, s *session) {
	if !c.tenantOf(w, r, s, "subscription", "subscriptions", "Edit subscription") {
		return
	}
	var sub m
	if err := c.call(r, s, "GET", "/v1/subscriptions/"+url.PathEscape(r.PathValue("id")), nil, &sub); err != nil {
		c.fail(w, r, s, err)
		return
	}
	c.subscriptionForm(w, r, s, http.StatusOK, sub, "")
}

// subscriptionRequest turns the form into the API's request body. New
// destination kinds or fields add their inputs here and in the template.
func subscriptionRequest(r *http.Request, creating bool) m {
	f := r.PostForm
	var types []m
	seen := map[string]bool{}
	add := func(t string) {
		t = strings.TrimSpace(t)
		if t == "" || seen[t] {
			return
		}
		seen[t] = true
		// type@major, or type:major (docs/concepts.md, "Event types and
		// their majors"); what does not read goes to the API as it was
		// typed, whose answer names it.
		ref, err := hub.ParseEventTypeRef(t)
		if err != nil {
			ref = hub.EventTypeRef{Type: t, SchemaMajor: 1}
		}
		types = append(types, m{"type": ref.Type, "schema_major": ref.SchemaMajor})
	}
	for _, t := range f["event_type"] {
		add(t)
	}
	for _, t := range strings.Split(f.Get("other_types"), ",") {
		add(t)
	}
	headers := map[string]string{}
	for _, line := range strings.Split(f.Get("headers"), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) != "" {
			headers[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	dest := destinationRequest(f, creating)
	if dest["type"] == hub.DestinationWebhook {
		dest["headers"] = headers
	}
	// Authentication is a webhook's: the other kinds' forms send its hidden
	// fields too, and they are not read.
	auth := map[string]m{
		"bearer": {"type": "bearer", "token": f.Get("auth_token")},
		"basic":  {"type": "basic", "username": f.Get("auth_username"), "password": f.Get("auth_password")},
		"header": {"type": "header", "name": f.Get("auth_name"), "value": f.Get("auth_value")},
		"oauth2_client_credentials": {"type": "oauth2_client_credentials", "token_url": strings.TrimSpace(f.Get("oauth_token_url")),
			"client_id": f.Get("oauth_client_id"), "client_secret": f.Get("oauth_client_secret"),
			"client_auth": strOr(f.Get("oauth_client_auth"), "basic")},
	}[f.Get("auth_type")]
	if auth != nil && auth["type"] == "oauth2_client_credentials" {
		for _, k := range []string{"scope", "audience"} {
			if v := strings.TrimSpace(f.Get("oauth_" + k)); v != "" {
				auth[k] = v
			}
		}
	}
	if auth != nil && dest["type"] == hub.DestinationWebhook {
		dest["auth"] = auth
	}
	body := m{"name": strings.TrimSpace(f.Get("name")), "event_types": types, "destination": dest}
	if creating && f.Get("signature_scheme") == "v1a" {
		body["signature"] = m{"scheme": "v1a"}
	}
	if types == nil {
		body["event_types"] = []m{}
	}
	if rs := strings.TrimSpace(f.Get("retry_schedule")); rs != "" {
		var sched []string
		for _, d := range strings.Split(rs, ",") {
			sched = append(sched, strings.TrimSpace(d))
		}
		body["retry_schedule"] = sched
	}
	if v := strings.TrimSpace(f.Get("max_in_flight")); v != "" {
		if n, err := strconv.Atoi(v); err == nil {
			body["max_in_flight"] = n
		} else {
			body["max_in_flight"] = v // the API names the field
		}
	}
	if raw := strings.TrimSpace(f.Get("filters")); raw != "" {
		// Sent as typed, not decoded and encoded again: a key given twice
		// reaches the API, which refuses it, instead of being dropped here.
		if json.Valid([]byte(raw)) {
			body["filters"] = json.RawMessage(raw)
		} else {
			body["filters"] = raw // not JSON: the API answers a 400 naming filters
		}
	} else if !creating {
		body["filters"] = nil // emptied: no filters
	}
	if v := strings.TrimSpace(f.Get("rate_limit")); v != "" {
		if n, err := strconv.Atoi(v); err == nil {
			body["rate_limit"] = m{"per_second": n}
		} else {
			body["rate_limit"] = m{"per_second": v} // the API names the field
		}
	} else if !creating {
		body["rate_limit"] = nil
	}
	// A jq program (docs/filters-and-transforms.md),
	// with the browser's CRLF line ends made LF.
	if program := strings.TrimSpace(strings.ReplaceAll(f.Get("transform"), "\r\n", "\n")); program != "" {
		body["transform"] = program
	} else if !creating {
		body["transform"] = nil // emptied: the event's data is sent unchanged
	}
	if creating {
		body["enabled"] = f.Get("enabled") != ""
	}
	if v := strings.TrimSpace(f.Get("backfill_since")); v != "" {
		// A new backfill only when one is typed: the field starts empty,
		// so saving an edit never restarts one.
		body["backfill"] = m{"since": backfillSince(v)}
	}
	return body
}

// backfillSince reads the form's since: RFC 3339 as is, or what a
// datetime-local picker sends (2026-11-30T11:00, no zone) as UTC. Anything
// else goes to the API as typed, which answers a 400 naming backfill.since.
func backfillSince(v string) string {
	for _, layout := range []string{"2006-01-02T15:04", "2006-01-02T15:04:05", "2006-01-02 15:04"} {
		if t, err := time.Parse(layout, v); err == nil {
			return t.UTC().Format(time.RFC3339)
		}
	}
	return v
}

// destinationRequest is the form's destination: a webhook, a RabbitMQ
// exchange, a Kafka topic
// (docs/brokers.md), a NATS JetStream
// subject or a Pub/Sub topic
// (docs/brokers.md). On an edit, a URL
// left as shown is not sent again (a broker URL is shown without its
// credentials, and sending it back would clear them), nor is SASL without a
// new password, nor a Pub/Sub key left empty.
func destinationRequest(f url.Values, creating bool) m {
	kind := f.Get("destination_type")
	if kind == "" {
		kind = hub.DestinationWebhook
	}
	dest := m{"type": kind}
	if u := strings.TrimSpace(f.Get("url")); kind != hub.DestinationKafka && kind != hub.DestinationPubSub && !hub.IsAWS(kind) && (creating || u != f.Get("url_was") || kind != f.Get("type_was")) {
		dest["url"] = u
	}
	switch kind {
	case hub.DestinationRabbitMQ:
		dest["exchange"], dest["routing_key"] = strings.TrimSpace(f.Get("exchange")), strings.TrimSpace(f.Get("routing_key"))
	case hub.DestinationNATS:
		dest["subject"], dest["stream"] = strings.TrimSpace(f.Get("subject")), strings.TrimSpace(f.Get("stream"))
	case hub.DestinationPubSub:
		dest["project"], dest["topic"] = strings.TrimSpace(f.Get("project")), strings.TrimSpace(f.Get("topic"))
		if key := strings.TrimSpace(f.Get("credentials")); key != "" || creating || kind != f.Get("type_was") {
			dest["credentials"] = key // the API takes the key as a string holding it
		}
	case hub.DestinationAWSSQS, hub.DestinationAWSSNS, hub.DestinationAWSEventBridge, hub.DestinationAWSKinesis:
		// docs/aws.md: the resource and the role; the external id is the
		// hub's, never sent.
		dest["role_arn"] = strings.TrimSpace(f.Get("role_arn"))
		field := map[string]string{hub.DestinationAWSSQS: "queue_url", hub.DestinationAWSSNS: "topic_arn",
			hub.DestinationAWSEventBridge: "event_bus_arn", hub.DestinationAWSKinesis: "stream_arn"}[kind]
		dest[field] = strings.TrimSpace(f.Get(field))
		if kind == hub.DestinationAWSEventBridge {
			dest["source"], dest["detail_type"] = strings.TrimSpace(f.Get("source")), strings.TrimSpace(f.Get("detail_type"))
		}
	case hub.DestinationKafka:
		var brokers []string
		for _, b := range strings.Split(f.Get("brokers"), ",") {
			if b = strings.TrimSpace(b); b != "" {
				brokers = append(brokers, b)
			}
		}
		dest["brokers"], dest["topic"], dest["tls"] = brokers, strings.TrimSpace(f.Get("topic")), f.Get("tls") != ""
		if mech := f.Get("sasl_mechanism"); mech != "" && (creating || f.Get("sasl_password") != "") {
			dest["sasl"] = m{"mechanism": mech, "username": f.Get("sasl_username"), "password": f.Get("sasl_password")}
		} else if mech == "" && !creating && f.Get("sasl_was") != "" {
			dest["sasl"] = nil
		}
	}
	if kind != hub.DestinationPubSub && !hub.IsAWS(kind) {
		tlsRequest(f, creating, dest)
	}
	return dest
}

// tlsRequest adds the form's mutual TLS fields to dest
// (docs/receivers.md#mutual-tls-and-fixed-egress): a certificate or key
// pasted is sent, an empty one kept (the key is never shown to fill the
// form again); the remove box clears the certificate with its key; CAs and
// the version are shown, so emptying them clears them.
func tlsRequest(f url.Values, creating bool, dest m) {
	if v := strings.TrimSpace(f.Get("client_certificate")); v != "" {
		dest["client_certificate"] = v + "\n"
	}
	if v := strings.TrimSpace(f.Get("client_key")); v != "" {
		dest["client_key"] = v + "\n"
	}
	if f.Get("remove_client_certificate") != "" && !creating {
		dest["client_certificate"] = nil
		delete(dest, "client_key")
	}
	if v := strings.TrimSpace(f.Get("ca_certificates")); v != "" {
		dest["ca_certificates"] = v + "\n"
	} else if !creating && f.Get("ca_was") != "" {
		dest["ca_certificates"] = nil
	}
	if v := f.Get("tls_min_version"); v != "" {
		dest["tls_min_version"] = v
	} else if !creating && f.Get("tls_min_was") != "" {
		dest["tls_min_version"] = nil
	}
}

// echo is what the form shows again after the API refused it.
func echo(body m, id string) m {
	out := m{}
	for k, v := range body {
		out[k] = v
	}
	if id != "" {
		out["id"] = id
	}
	var types []any
	if ts, ok := body["event_types"].([]m); ok {
		for _, t := range ts {
			types = append(types, map[string]any(t))
		}
	}
	out["event_types"] = types
	if b, ok := body["backfill"].(m); ok {
		out["backfill_since"] = b["since"] // what was typed, shown again
		delete(out, "backfill")
	}
	return out
}

func (c *Console) createSubscription(w http.ResponseWriter, r *http.Request, s *session) {
	body := subscriptionRequest(r, true)
	var created m
	if err := c.call(r, s, "POST", "/v1/subscriptions", body, &created); err != nil {
		if ae, ok := err.(*apiError); ok && (ae.Status == 400 || ae.Status == 409) {
			c.subscriptionForm(w, r, s, ae.Status, echo(body, ""), ae.Message)
			return
		}
		c.fail(w, r, s, err)
		return
	}
	if key, ok := created["signing_public_key"].(string); ok {
		c.show(w, r, s, http.StatusCreated, "shown_once", "subscriptions", "Subscription created", m{
			"Sub": created, "Secret": key, "Label": "Public key", "Warnings": created["warnings"],
			"Message": "Subscription created. Receivers verify its Ed25519 (v1a) signatures with this public key; it is not secret and stays on the subscription's page. Then verify the destination.",
		})
		return
	}
	c.show(w, r, s, http.StatusCreated, "shown_once", "subscriptions", "Subscription created", m{
		"Sub": created, "Secret": created["signing_secret"], "Warnings": created["warnings"],
		"Message": "Subscription created. Copy its signing secret now: it is shown only this once. Then verify the destination.",
	})
}

func (c *Console) updateSubscription(w http.ResponseWriter, r *http.Request, s *session) {
	id := r.PathValue("id")
	body := subscriptionRequest(r, false)
	if _, ok := body["destination"].(m)["auth"]; !ok && r.PostForm.Get("auth_type") == "none" {
		body["destination"].(m)["auth"] = nil
	}
	if err := c.call(r, s, "PATCH", "/v1/subscriptions/"+url.PathEscape(id), body, nil); err != nil {
		if ae, ok := err.(*apiError); ok && (ae.Status == 400 || ae.Status == 409) {
			c.subscriptionForm(w, r, s, ae.Status, echo(body, id), ae.Message)
			return
		}
		c.fail(w, r, s, err)
		return
	}
	http.Redirect(w, r, Prefix+"subscriptions/"+url.PathEscape(id)+"?done=updated", http.StatusSeeOther)
}

// subscriptionAction: verify, rotate-secret, test, enable, disable,
// delete, replay (the dead letters, in bulk).
func (c *Console) subscriptionAction(w http.ResponseWriter, r *http.Request, s *session) {
	id := r.PathValue("id")
	base := "/v1/subscriptions/" + url.PathEscape(id)
	page := Prefix + "subscriptions/" + url.PathEscape(id)
	done := func(what string) { http.Redirect(w, r, page+"?done="+what, http.StatusSeeOther) }
	switch r.PathValue("op") {
	case "verify":
		var res m
		status, data, err := c.deps.API.Call(r.Context(), s.Principal, s.Tenant, "POST", base+"/verify", m{})
		if err != nil {
			c.internalError(w, r, s, err)
			return
		}
		if status == http.StatusOK {
			done("verified")
			return
		}
		json.Unmarshal(data, &res)
		if status != http.StatusUnprocessableEntity {
			c.fail(w, r, s, toAPIError(status, res))
			return
		}
		c.show(w, r, s, status, "result", "subscriptions", "Verification failed", m{"Back": page, "Title": "Verification failed", "Body": res})
	case "rotate-secret":
		var res m
		if err := c.call(r, s, "POST", base+"/rotate-secret", m{"overlap": strOr(r.PostFormValue("overlap"), "24h")}, &res); err != nil {
			c.fail(w, r, s, err)
			return
		}
		if key, ok := res["signing_public_key"].(string); ok {
			c.show(w, r, s, http.StatusOK, "shown_once", "subscriptions", "Key rotated", m{
				"Sub": m{"id": id}, "Secret": key, "Label": "New public key", "Expires": res["previous_secret_expires_at"],
				"Message": "A new Ed25519 key pair signs from now on; give receivers this public key. The previous key keeps signing until it expires.",
			})
			return
		}
		c.show(w, r, s, http.StatusOK, "shown_once", "subscriptions", "Secret rotated", m{
			"Sub": m{"id": id}, "Secret": res["signing_secret"], "Expires": res["previous_secret_expires_at"],
			"Message": "The new signing secret is shown only this once. The previous one keeps signing until it expires.",
		})
	case "test":
		body := m{}
		if t := strings.TrimSpace(r.PostFormValue("type")); t != "" {
			body["type"] = t
		}
		if d := strings.TrimSpace(r.PostFormValue("data")); d != "" {
			body["data"] = json.RawMessage(d)
			if !json.Valid([]byte(d)) {
				c.renderError(w, r, s, http.StatusBadRequest, "data: not valid JSON")
				return
			}
		}
		var res m
		if err := c.call(r, s, "POST", base+"/test", body, &res); err != nil {
			c.fail(w, r, s, err)
			return
		}
		c.show(w, r, s, http.StatusOK, "result", "subscriptions", "Test event sent", m{"Back": page, "Title": "Test event sent", "Test": res})
	case "enable", "disable":
		if err := c.call(r, s, "PATCH", base, m{"enabled": r.PathValue("op") == "enable"}, nil); err != nil {
			c.fail(w, r, s, err)
			return
		}
		done(r.PathValue("op") + "d")
	case "delete":
		if err := c.call(r, s, "DELETE", base, nil, nil); err != nil {
			c.fail(w, r, s, err)
			return
		}
		http.Redirect(w, r, Prefix+"subscriptions?done=deleted", http.StatusSeeOther)
	case "replay":
		var res m
		body := m{"status": "dead_lettered"}
		if since := strings.TrimSpace(r.PostFormValue("since")); since != "" {
			body["since"] = rfc3339(since)
		}
		if err := c.call(r, s, "POST", base+"/replay", body, &res); err != nil {
			c.fail(w, r, s, err)
			return
		}
		c.show(w, r, s, http.StatusAccepted, "result", "subscriptions", "Dead letters replayed", m{"Back": page, "Title": "Dead letters replayed", "Replay": replayResult(res)})
	default:
		c.renderError(w, r, s, http.StatusNotFound, "No such action.")
	}
}

// replayResult says what a bulk replay (the API's answer res) queued, what
// it matched and skipped and, when it queued none, why.
func replayResult(res m) m {
	n, _ := res["replayed"].(float64)
	reason, _ := res["reason"].(string)
	noun := "dead letters"
	if n == 1 {
		noun = "dead letter"
	}
	return m{
		"Queued": fmt.Sprintf("Queued %s %s again.", num(res["replayed"]), noun),
		"Counts": fmt.Sprintf("Matching dead letters: %s; already replayed, so skipped: %s.", num(res["matched"]), num(res["already_replayed"])),
		"Reason": reason,
	}
}

func strOr(v, d string) string {
	if strings.TrimSpace(v) == "" {
		return d
	}
	return v
}

func toAPIError(status int, body m) error {
	e, _ := body["error"].(map[string]any)
	return &apiError{Status: status, Code: str(e["code"]), Message: str(e["message"])}
}
