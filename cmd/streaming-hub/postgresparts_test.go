package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/lerianstudio/streaming-hub/internal/testkit"
	"github.com/lerianstudio/streaming-hub/internal/testkit/gomigrate"
)

// With no database URL, the POSTGRES_* variables Lerian's chart renders
// make it: `streaming-hub migrate` reaches the database as the user they
// name (a password with URL characters in it) and migrates its schema.
func TestMigrate_ConnectsWithThePostgresParts(t *testing.T) {
	dsn := gomigrate.URL(t, testkit.PostgresPoolURL(t))
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	schema := u.Query().Get("search_path")
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	// A role of its own whose search_path is the test's schema: the parts
	// carry no search_path. The server trusts loopback, so the password is
	// sent, not checked.
	var b [4]byte
	rand.Read(b[:])
	role := "hub user " + hex.EncodeToString(b[:])
	ident := pgx.Identifier{role}.Sanitize()
	if _, err := conn.Exec(ctx, "CREATE ROLE "+ident+" LOGIN; GRANT ALL ON SCHEMA "+schema+" TO "+ident+
		"; ALTER ROLE "+ident+" SET search_path = "+schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			return
		}
		defer conn.Close(ctx)
		conn.Exec(ctx, "DROP OWNED BY "+ident+" CASCADE; DROP ROLE "+ident)
	})
	vars := map[string]string{
		"POSTGRES_HOST": u.Hostname(), "POSTGRES_PORT": u.Port(), "POSTGRES_USER": role,
		"POSTGRES_PASSWORD": "p@ss:w/rd?#%", "POSTGRES_DB": strings.TrimPrefix(u.Path, "/"), "POSTGRES_SSLMODE": "disable",
	}
	if code, out, errOut := runCmd(vars, "migrate"); code != exitOK || out != "schema is current\n" {
		t.Fatalf("migrate with POSTGRES_*: exit %d, %s%s", code, out, errOut)
	}
	var owner string
	if err := conn.QueryRow(ctx, `SELECT tableowner FROM pg_tables WHERE schemaname = $1 AND tablename = 'subscriptions'`, schema).Scan(&owner); err != nil || owner != role {
		t.Fatalf("the schema's tables belong to %q (%v), want the POSTGRES_USER %q", owner, err, role)
	}
}
