// Command receiver is a small webhook destination for trying the hub: it
// answers verification probes by echoing their body (which carries the
// challenge) and prints every delivery it gets.
//
//	go run ./examples/receiver -addr 127.0.0.1:9000
package main

import (
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"sort"
	"strings"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:9000", "address to listen on")
	flag.Parse()

	http.HandleFunc("POST /", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			http.Error(w, "read error", http.StatusBadRequest)
			return
		}
		if r.Header.Get("X-Lerian-Event-Type") == "hub.verification" {
			// The probe passes when the answer contains its challenge.
			log.Printf("verification probe %s: echoing the challenge", r.Header.Get("webhook-id"))
			w.Header().Set("Content-Type", "application/json")
			w.Write(body)
			return
		}
		var lines []string
		for k, v := range r.Header {
			lk := strings.ToLower(k)
			if strings.HasPrefix(lk, "x-lerian-") || strings.HasPrefix(lk, "ce-") || strings.HasPrefix(lk, "webhook-") {
				lines = append(lines, fmt.Sprintf("  %s: %s", k, strings.Join(v, ", ")))
			}
		}
		sort.Strings(lines)
		log.Printf("delivery %s\n%s\n  body: %s", r.Header.Get("X-Lerian-Delivery-Id"), strings.Join(lines, "\n"), body)
		w.WriteHeader(http.StatusNoContent)
	})
	log.Printf("receiver listening on http://%s", *addr)
	log.Fatal(http.ListenAndServe(*addr, nil))
}
