//go:build ignore

// A client of the hub written against the Go client oapi-codegen generates
// from internal/api/openapi.json with default options (check.sh copies this
// file into a temporary module as main.go; it is not part of the repository's
// build). A create needs only the name, the event types and a destination.
package main

import (
	"context"
	"fmt"
	"net/http"

	"example.com/hubcheck/hubclient"
)

func main() {
	c, err := hubclient.NewClientWithResponses("http://streaming-hub:8080")
	if err != nil {
		panic(err)
	}
	webhook, url := hubclient.Webhook, "https://example.com/hooks"
	body := hubclient.CreateSubscriptionJSONRequestBody{
		Name:        "ledger-hooks",
		EventTypes:  []hubclient.EventType{{Type: "transaction.posted", SchemaMajor: 1}},
		Destination: hubclient.DestinationIn{Type: &webhook, Url: &url},
	}
	// Fields the hub defaults stay optional: omitted, they are not sent.
	var maxInFlight *int = body.MaxInFlight
	var enabled *bool = body.Enabled
	if maxInFlight != nil || enabled != nil {
		panic("unset fields are sent")
	}
	resp, err := c.CreateSubscriptionWithResponse(context.Background(), nil, body, func(_ context.Context, r *http.Request) error {
		r.Header.Set("Authorization", "Bearer k")
		return nil
	})
	if err != nil {
		panic(err)
	}
	if resp.JSON201 != nil {
		fmt.Println(resp.JSON201.Id, resp.JSON201.MaxInFlight)
		return
	}
	fmt.Println(resp.StatusCode())
}
