package config

import (
	"fmt"
	"io"
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
	if r.files == nil {
		r.files = make(map[string]string)
	}
	r.files[name] = path
	b, err := readSecretFile(path)
	if err != nil {
		r.fail(name, "cannot read %q: %s", path, readProblem(err))
		return "", true
	}
	if kekVars[name] {
		r.noteKEKFile(fileVar, path)
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

// MaxSecretFile bounds what is read of a secret's file: a KEK is 44
// characters, a token or a proxy URL a few hundred; a file of megabytes is
// a mistake, refused without reading it whole.
const MaxSecretFile = 64 << 10

// readSecretFile reads the file at path, up to MaxSecretFile bytes.
func readSecretFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxSecretFile+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxSecretFile {
		return nil, fmt.Errorf("larger than %d KiB: not a secret's file", MaxSecretFile>>10)
	}
	return b, nil
}

// kekVars are the variables whose files hold KEKs.
var kekVars = map[string]bool{"KEK": true, "KEK_PREVIOUS": true}

// looseFile is a KEK file readable by its group or others.
type looseFile struct {
	name, path string // the variable that names it, and its path
	mode       os.FileMode
}

// noteKEKFile notes the KEK file at path (named by the variable name) if
// its group or others may read it: on a shared host any account could
// take the key that opens every secret.
func (r *reader) noteKEKFile(name, path string) {
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm()&0o044 == 0 {
		return
	}
	r.looseKEKs = append(r.looseKEKs, looseFile{name: name, path: path, mode: st.Mode().Perm()})
}

// checkKEKFiles reports each loose KEK file: a warning at start, refused
// with ENV=production (docs/security.md#the-kek).
func (r *reader) checkKEKFiles(env string) {
	for _, f := range r.looseKEKs {
		if env == envProduction {
			r.fail(f.name, "the file %q holding the KEK is readable by its group or others (mode %04o): ENV=production refuses it; make it readable by the hub's user alone (chmod 0400; on Kubernetes, defaultMode: 0400 on the secret's volume)", f.path, f.mode)
			continue
		}
		r.warn("%s%s: the file %q holding the KEK is readable by its group or others (mode %04o): make it readable by the hub's user alone (chmod 0400); ENV=production refuses to start with it", Prefix, f.name, f.path, f.mode)
	}
	r.looseKEKs = nil
}
