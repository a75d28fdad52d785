package config

import (
	"fmt"
	"os"
	"strings"
)

// secretFiles are the variables whose value may instead be read from a
// mounted file named by <NAME>_FILE (docs/lerian-platform.md): a Kubernetes
// or Docker secret mounted as a file never passes through the environment.
var secretFiles = map[string]bool{"KEK": true, "KEK_PREVIOUS": true, "ADMIN_TOKEN": true,
	"EGRESS_PROXY":      true, // its URL may hold the proxy's credentials
	"POSTGRES_PASSWORD": true}

// fromFile reads the value of name from the file <name>_FILE names, when
// set: the file's bytes without one trailing "\n" or "\r\n". Setting both
// name and <name>_FILE is an error, and so is a file that cannot be read
// or is empty; the errors name the variable and the path, never the
// file's content. Errors about the value read (not base64, too short)
// then name <name>_FILE too.
func (r *reader) fromFile(name string) (string, bool) {
	fileVar := name + "_FILE"
	path, ok := r.raw(fileVar)
	if !ok {
		return "", false
	}
	if v := strings.TrimSpace(r.getenv(Prefix + name)); v != "" {
		r.fail(name, "and %s%s are both set: set only one of them", Prefix, fileVar)
		return "", true
	}
	if r.from == nil {
		r.from = make(map[string]string)
	}
	r.from[name] = fileVar
	b, err := os.ReadFile(path)
	if err != nil {
		r.fail(name, "cannot read %q: %s", path, readProblem(err))
		return "", true
	}
	s := string(b)
	if t, ok := strings.CutSuffix(s, "\n"); ok {
		s = strings.TrimSuffix(t, "\r")
	}
	if s == "" {
		r.fail(name, "the file %q is empty", path)
		return "", true
	}
	return s, true
}

// readProblem is why a file could not be read, without repeating its
// path (the message names it once).
func readProblem(err error) string {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err.Error()
	}
	return fmt.Sprint(err)
}
