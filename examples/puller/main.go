// Command puller reads a tenant's events with the hub's pull API, in
// arrival order, and carries on where it stopped: the cursor is kept in a
// file after every page.
//
//	HUB_URL=http://localhost:8080 HUB_TOKEN=shk_key_... go run ./examples/puller -types transaction.posted
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"strings"
)

func main() {
	types := flag.String("types", "", "comma-separated event types (default: all)")
	cursorFile := flag.String("cursor-file", ".puller-cursor", "where the cursor is kept between runs")
	flag.Parse()
	p := &Puller{Hub: os.Getenv("HUB_URL"), Token: os.Getenv("HUB_TOKEN"), Types: *types}
	if p.Hub == "" {
		p.Hub = "http://localhost:8080"
	}
	if p.Token == "" {
		log.Fatal("HUB_TOKEN: required: a tenant API key (shk_key_...)")
	}
	cursor := ""
	if b, err := os.ReadFile(*cursorFile); err == nil {
		cursor = strings.TrimSpace(string(b))
	} else if !errors.Is(err, os.ErrNotExist) {
		log.Fatal(err)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	err := p.Run(ctx, cursor,
		func(ev Event) error {
			// Apply the event here, idempotently (dedupe on ev.ID).
			fmt.Printf("#%d %s %s %s\n", ev.Sequence, ev.Type, ev.ID, ev.Data)
			return nil
		},
		func(cursor string) error { return os.WriteFile(*cursorFile, []byte(cursor), 0o600) },
	)
	if err != nil && !errors.Is(err, context.Canceled) {
		log.Fatal(err)
	}
}
