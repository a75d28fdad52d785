package main

import (
	"context"
	"flag"
	"fmt"
	"time"

	"github.com/lerianstudio/streaming-hub/internal/app"
	"github.com/lerianstudio/streaming-hub/internal/config"
	"github.com/lerianstudio/streaming-hub/internal/envelope"
	"github.com/lerianstudio/streaming-hub/internal/store"
)

func runRewrap(args []string, e env) int {
	fs := flag.NewFlagSet("rewrap", flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	batch := fs.Int("batch", 100, "rows per batch")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `Usage: streaming-hub rewrap [--batch N]

Re-seals every stored secret (signing secrets, destination credentials)
under the current key-encryption key, STREAMING_HUB_KEK, opening each with
whichever of STREAMING_HUB_KEK and STREAMING_HUB_KEK_PREVIOUS sealed it.
It prints how many rows it rewrote and how many each KEK id still holds:
once no row is left under an old id, that key can be dropped from
STREAMING_HUB_KEK_PREVIOUS. Safe to run while the hub runs, and again.

Reads STREAMING_HUB_DATABASE_URL, STREAMING_HUB_KEK (or where
STREAMING_HUB_KEK_SOURCE and STREAMING_HUB_KEK_REF say: another variable, a
file or an AWS Secrets Manager secret), STREAMING_HUB_KEK_PREVIOUS.

Flags:
`)
		printFlags(fs)
	}
	if err := parseFlags(fs, args); err != nil {
		return flagExit(err)
	}
	keys, err := config.LoadKeys(e.getenv)
	if err != nil {
		printLines(e.stderr, err)
		return exitUsage
	}
	if keys.KEK == nil {
		if keys.KEK, err = app.ResolveKEK(context.Background(), keys.KEKSource); err != nil {
			printLines(e.stderr, err)
			return exitUsage
		}
	}
	ring, err := envelope.NewKeyring(keys.KEK, keys.PreviousKEKs...)
	if err != nil {
		fmt.Fprintln(e.stderr, "streaming-hub: STREAMING_HUB_KEK:", err)
		return exitUsage
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	s, err := app.OpenStore(ctx, keys.DatabaseURL, store.Options{})
	if err != nil {
		fmt.Fprintln(e.stderr, "streaming-hub:", err)
		return exitError
	}
	defer s.Close()
	if err := s.CheckSchema(ctx); err != nil {
		fmt.Fprintln(e.stderr, "streaming-hub: database:", err, "(run streaming-hub migrate)")
		return exitError
	}
	res, err := app.Rewrap(ctx, s, ring, *batch)
	fmt.Fprintf(e.stdout, "rewrote %d rows under KEK %s\n", res.Rewritten, ring.KeyID())
	for _, id := range app.SortedKeys(res.ByKEK) {
		label := "old"
		if id == ring.KeyID() {
			label = "current"
		}
		fmt.Fprintf(e.stdout, "KEK %s (%s): %d rows\n", id, label, res.ByKEK[id])
	}
	if res.Failed > 0 {
		fmt.Fprintf(e.stderr, "streaming-hub: %d rows open under no KEK given: add their key to STREAMING_HUB_KEK_PREVIOUS\n", res.Failed)
		return exitError
	}
	if err != nil {
		fmt.Fprintln(e.stderr, "streaming-hub: rewrap:", err)
		return exitError
	}
	return exitOK
}
