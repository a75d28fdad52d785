package app

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/lerianstudio/streaming-hub/internal/config"
)

// devSecrets are the KEK and admin token dev mode generates when the
// environment has none. They are kept (mode 0600) so that a restart can
// still decrypt the secrets it stored: beside an SQLite file (delete them
// together), or, on PostgreSQL, in the user's config folder. Never in the
// working directory, which is usually a source tree.
type devSecrets struct {
	KEK        string `json:"kek,omitempty"`
	AdminToken string `json:"admin_token,omitempty"`
}

// devSecretsFile says where dev mode's secrets came from, for the banner.
type devSecretsFile struct {
	Path      string // "" when the environment supplied every secret
	Generated bool   // a secret was generated (and written to Path) by this start
}

// devSecretsName is the file in the user's config folder that keeps the
// secrets of a dev hub on PostgreSQL.
const devSecretsName = "dev-secrets.json"

// devSecretsPath is where dev mode keeps the secrets of the database that
// cfg names: beside an SQLite file, else in $XDG_CONFIG_HOME/streaming-hub/
// or ~/.config/streaming-hub/ (docs/cli.md), on every platform.
func devSecretsPath(cfg config.Config) (string, error) {
	if path, ok := config.SQLitePath(cfg.DatabaseURL); ok {
		return path + ".secrets.json", nil
	}
	dir := os.Getenv("XDG_CONFIG_HOME")
	if dir != "" && !filepath.IsAbs(dir) {
		return "", fmt.Errorf("dev secrets: XDG_CONFIG_HOME %q is not an absolute path", dir)
	}
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("dev secrets: no folder to keep generated secrets in (%w); set STREAMING_HUB_KEK and STREAMING_HUB_ADMIN_TOKEN, or HOME", err)
		}
		dir = filepath.Join(home, ".config")
	}
	return filepath.Join(dir, "streaming-hub", devSecretsName), nil
}

// ensureDevSecrets fills cfg.KEK and cfg.AdminToken when unset: from the
// secrets file when it has them, else generated and added to the file.
// Secrets that the environment gives win and are never written.
func ensureDevSecrets(cfg *config.Config) (devSecretsFile, error) {
	if cfg.KEK != nil && cfg.AdminToken != "" {
		return devSecretsFile{}, nil
	}
	path, err := devSecretsPath(*cfg)
	if err != nil {
		return devSecretsFile{}, err
	}
	var s devSecrets
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		if err := json.Unmarshal(b, &s); err != nil {
			return devSecretsFile{}, fmt.Errorf("dev secrets %s: %w (delete it, with the database, to start over)", path, err)
		}
	case errors.Is(err, fs.ErrNotExist):
	default:
		return devSecretsFile{}, fmt.Errorf("dev secrets: %w", err)
	}

	generated := false
	if cfg.KEK == nil {
		if s.KEK == "" {
			s.KEK = base64.StdEncoding.EncodeToString(randomBytes(32))
			generated = true
		}
		kek, err := base64.StdEncoding.DecodeString(s.KEK)
		if err != nil || len(kek) < 32 {
			return devSecretsFile{}, fmt.Errorf("dev secrets %s: bad kek (delete it, with the database, to start over)", path)
		}
		cfg.KEK = kek
	}
	if cfg.AdminToken == "" {
		if s.AdminToken == "" {
			s.AdminToken = "dev_" + hex.EncodeToString(randomBytes(24))
			generated = true
		}
		cfg.AdminToken = s.AdminToken
	}
	if generated {
		if err := writeDevSecrets(path, s); err != nil {
			return devSecretsFile{}, err
		}
	}
	return devSecretsFile{Path: path, Generated: generated}, nil
}

// writeDevSecrets replaces the file at path with s: mode 0600, in a folder
// created with mode 0700 when missing, never half written.
func writeDevSecrets(path string, s devSecrets) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("dev secrets: %w", err)
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("dev secrets: %w", err)
	}
	f, err := os.CreateTemp(dir, ".dev-secrets-*") // created with mode 0600
	if err != nil {
		return fmt.Errorf("dev secrets: %w", err)
	}
	_, err = f.Write(append(b, '\n'))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("dev secrets %s: %w", path, err)
	}
	return nil
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	rand.Read(b) // never fails (crypto/rand)
	return b
}
