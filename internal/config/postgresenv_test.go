package config_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/lerianstudio/streaming-hub/internal/config"
)

// partsBase is a serve environment with the database by parts, as
// Lerian's chart renders it: no URL.
func partsBase() map[string]string {
	env := chartBase()
	delete(env, "STREAMING_HUB_DATABASE_URL")
	for k, v := range map[string]string{
		"POSTGRES_HOST": "db.internal", "POSTGRES_PORT": "6432", "POSTGRES_USER": "hub user",
		"POSTGRES_PASSWORD": "p@ss:w/rd?#%&=", "POSTGRES_DB": "streaming_hub", "POSTGRES_SSLMODE": "verify-full",
	} {
		env[k] = v
	}
	return env
}

// pgConfig is what pgx, which opens the database, makes of the URL.
func pgConfig(t *testing.T, url string) *pgconn.Config {
	t.Helper()
	c, err := pgconn.ParseConfig(url)
	if err != nil {
		t.Fatalf("pgx cannot parse the URL the parts made: %v", err)
	}
	return c
}

// With no URL set, POSTGRES_* make it, user and password escaped: pgx
// reads back exactly what was set.
func TestLoad_PostgresPartsMakeTheURL(t *testing.T) {
	cfg, warns, err := loadWith(t, partsBase())
	if err != nil || len(warns) != 0 {
		t.Fatalf("err %v, warnings %q", err, warns)
	}
	pc := pgConfig(t, cfg.DatabaseURL)
	if pc.Host != "db.internal" || pc.Port != 6432 || pc.User != "hub user" || pc.Password != "p@ss:w/rd?#%&=" || pc.Database != "streaming_hub" {
		t.Fatalf("pgx reads host %q port %d user %q password %q database %q from %s", pc.Host, pc.Port, pc.User, pc.Password, pc.Database, cfg.DatabaseURL)
	}
	if pc.TLSConfig == nil || pc.TLSConfig.InsecureSkipVerify || pc.TLSConfig.ServerName != "db.internal" {
		t.Fatalf("sslmode verify-full was not kept: %+v", pc.TLSConfig)
	}

	// The defaults: PostgreSQL's port, libpq's sslmode (left to the client).
	env := partsBase()
	delete(env, "POSTGRES_PORT")
	delete(env, "POSTGRES_SSLMODE")
	env["STREAMING_HUB_ENV"] = "local"
	cfg, _, err = loadWith(t, env)
	if err != nil {
		t.Fatal(err)
	}
	if pc := pgConfig(t, cfg.DatabaseURL); pc.Port != config.DefaultPostgresPort || strings.Contains(cfg.DatabaseURL, "sslmode") {
		t.Fatalf("defaults: port %d, URL %s", pc.Port, cfg.DatabaseURL)
	}

	// With the prefix too; the prefixed name wins.
	env = partsBase()
	env["STREAMING_HUB_POSTGRES_HOST"] = "db.prefixed"
	if cfg, _, err := loadWith(t, env); err != nil || pgConfig(t, cfg.DatabaseURL).Host != "db.prefixed" {
		t.Fatalf("prefixed host: %v", err)
	}

	// `streaming-hub migrate` reads the same.
	if url, err := config.DatabaseURL(func(k string) string { return partsBase()[k] }); err != nil || pgConfig(t, url).Host != "db.internal" {
		t.Fatalf("DatabaseURL: %q, %v", url, err)
	}
}

// A URL, when set, is used; parts that say otherwise are named in a
// warning (values never shown), parts that agree are not.
func TestLoad_PostgresPartsYieldToTheURL(t *testing.T) {
	env := partsBase()
	env["STREAMING_HUB_POSTGRES_DSN"] = "postgres://hub%20user:p%40ss%3Aw%2Frd%3F%23%25&=@DB.internal:6432/streaming_hub?sslmode=verify-full"
	cfg, warns, err := loadWith(t, env)
	if err != nil || len(warns) != 0 || cfg.DatabaseURL != env["STREAMING_HUB_POSTGRES_DSN"] {
		t.Fatalf("agreeing parts: url %s, warnings %q, err %v", cfg.DatabaseURL, warns, err)
	}
	env["STREAMING_HUB_POSTGRES_DSN"] = "postgres://hub:other@db2.internal/hub?sslmode=verify-full"
	cfg, warns, err = loadWith(t, env)
	if err != nil || cfg.DatabaseURL != env["STREAMING_HUB_POSTGRES_DSN"] {
		t.Fatalf("url %s, err %v", cfg.DatabaseURL, err)
	}
	if len(warns) != 1 || !strings.Contains(warns[0], "POSTGRES_HOST, POSTGRES_PORT, POSTGRES_USER, POSTGRES_PASSWORD, POSTGRES_DB are set and differ") {
		t.Fatalf("warnings %q", warns)
	}
	if strings.Contains(warns[0], "p@ss") || strings.Contains(warns[0], "other") || strings.Contains(warns[0], "db2") {
		t.Fatalf("the warning shows a value: %s", warns[0])
	}
}

func TestLoad_PostgresPasswordFromAFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(path, []byte("from-a-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"POSTGRES_PASSWORD_FILE", "STREAMING_HUB_POSTGRES_PASSWORD_FILE"} {
		env := partsBase()
		delete(env, "POSTGRES_PASSWORD")
		env[name] = path
		cfg, _, err := loadWith(t, env)
		if err != nil || pgConfig(t, cfg.DatabaseURL).Password != "from-a-file" {
			t.Fatalf("%s: err %v", name, err)
		}
	}
	env := partsBase()
	delete(env, "POSTGRES_PASSWORD")
	env["POSTGRES_PASSWORD_FILE"] = filepath.Join(t.TempDir(), "missing")
	if _, _, err := loadWith(t, env); err == nil || !strings.HasPrefix(err.Error(), "POSTGRES_PASSWORD_FILE: cannot read") {
		t.Fatalf("a missing file: %v", err)
	}
}

// A bad part stops the start with one line naming it as the chart sets
// it; ENV=production's TLS rule names POSTGRES_SSLMODE for a URL made of
// parts.
func TestLoad_PostgresPartsProblems(t *testing.T) {
	for _, c := range []struct {
		name    string
		set     map[string]string
		unset   []string
		wantErr string
	}{
		{"port", map[string]string{"POSTGRES_PORT": "http"}, nil, "POSTGRES_PORT: must be a port number"},
		{"sslmode", map[string]string{"POSTGRES_SSLMODE": "on"}, nil, "POSTGRES_SSLMODE: must be one of disable, allow"},
		{"no host", nil, []string{"POSTGRES_HOST"}, "POSTGRES_HOST: required to make the database URL"},
		{"password without user", nil, []string{"POSTGRES_USER"}, "POSTGRES_USER: required with POSTGRES_PASSWORD"},
		{"production without TLS", map[string]string{"POSTGRES_SSLMODE": "disable", "STREAMING_HUB_ENV": "production", "STREAMING_HUB_ALLOW_INSECURE_KAFKA": "true"}, nil,
			"POSTGRES_SSLMODE: ENV=production needs require, verify-ca or verify-full, got disable"},
		{"production, sslmode unset", map[string]string{"STREAMING_HUB_ENV": "production", "STREAMING_HUB_ALLOW_INSECURE_KAFKA": "true"}, []string{"POSTGRES_SSLMODE"},
			"POSTGRES_SSLMODE: ENV=production needs require, verify-ca or verify-full, got unset (libpq's prefer)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			env := partsBase()
			for k, v := range c.set {
				env[k] = v
			}
			for _, k := range c.unset {
				delete(env, k)
			}
			_, _, err := loadWith(t, env)
			if err == nil || !strings.HasPrefix(err.Error(), c.wantErr) {
				t.Fatalf("err %v, want %q", err, c.wantErr)
			}
			if strings.Contains(err.Error(), "p@ss") {
				t.Fatalf("the error shows the password: %v", err)
			}
		})
	}
	env := partsBase()
	env["STREAMING_HUB_ENV"], env["STREAMING_HUB_ALLOW_INSECURE_KAFKA"] = "production", "true"
	if _, _, err := loadWith(t, env); err != nil {
		t.Fatalf("production with verify-full: %v", err)
	}
}
