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

	"github.com/lerianstudio/streaming-hub/internal/config"
)

// devSecrets are the KEK and admin token dev mode generates when the
// environment has none. They are kept (mode 0600) beside the database so a
// restart can still decrypt the secrets it stored; delete the file with the
// database.
type devSecrets struct {
	KEK        string `json:"kek"`
	AdminToken string `json:"admin_token"`
}

func devSecretsPath(cfg config.Config) string {
	if path, ok := config.SQLitePath(cfg.DatabaseURL); ok {
		return path + ".secrets.json"
	}
	return "streaming-hub.dev-secrets.json"
}

// ensureDevSecrets fills cfg.KEK and cfg.AdminToken when unset, reusing the
// secrets file when there is one. It returns the file it used ("" when the
// environment supplied both).
func ensureDevSecrets(cfg *config.Config) (string, error) {
	if cfg.KEK != nil && cfg.AdminToken != "" {
		return "", nil
	}
	path := devSecretsPath(*cfg)
	var s devSecrets
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		if err := json.Unmarshal(b, &s); err != nil {
			return "", fmt.Errorf("dev secrets %s: %w (delete it, with the database, to start over)", path, err)
		}
	case errors.Is(err, fs.ErrNotExist):
		kek := make([]byte, 32)
		tok := make([]byte, 24)
		rand.Read(kek)
		rand.Read(tok)
		s = devSecrets{KEK: base64.StdEncoding.EncodeToString(kek), AdminToken: "dev_" + hex.EncodeToString(tok)}
		b, _ := json.MarshalIndent(s, "", "  ")
		if err := os.WriteFile(path, append(b, '\n'), 0o600); err != nil {
			return "", fmt.Errorf("dev secrets: %w", err)
		}
	default:
		return "", fmt.Errorf("dev secrets: %w", err)
	}
	if cfg.KEK == nil {
		kek, err := base64.StdEncoding.DecodeString(s.KEK)
		if err != nil || len(kek) < 32 {
			return "", fmt.Errorf("dev secrets %s: bad kek (delete it, with the database, to start over)", path)
		}
		cfg.KEK = kek
	}
	if cfg.AdminToken == "" {
		cfg.AdminToken = s.AdminToken
	}
	return path, nil
}
