package config

import (
	"strings"
	"testing"
	"time"
)

// STREAMING_HUB_CONSOLE_SESSION_MAX_AGE is a console session's absolute
// lifetime (docs/security.md): 12 h unless set, a positive duration when set.
func TestLoad_ConsoleSessionMaxAge(t *testing.T) {
	c, err := Load(Dev, env(nil))
	if err != nil || c.Console.SessionMaxAge != 12*time.Hour {
		t.Fatalf("default: %v, %v", c.Console.SessionMaxAge, err)
	}
	c, err = Load(Dev, env(map[string]string{"STREAMING_HUB_CONSOLE_SESSION_MAX_AGE": "30m"}))
	if err != nil || c.Console.SessionMaxAge != 30*time.Minute {
		t.Fatalf("30m: %v, %v", c.Console.SessionMaxAge, err)
	}
	for _, bad := range []string{"0s", "-1h", "forever"} {
		_, err := Load(Dev, env(map[string]string{"STREAMING_HUB_CONSOLE_SESSION_MAX_AGE": bad}))
		if err == nil || !strings.HasPrefix(err.Error(), "STREAMING_HUB_CONSOLE_SESSION_MAX_AGE: must be a positive Go duration") {
			t.Errorf("%q: %v", bad, err)
		}
	}
	if w := Unknown([]string{"STREAMING_HUB_CONSOLE_SESSION_MAX_AGE=1h"}); len(w) != 0 {
		t.Errorf("CONSOLE_SESSION_MAX_AGE is reported unknown: %v", w)
	}
}
