package config

import (
	"net"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
)

// The PostgreSQL connection by parts, as Lerian's chart renders them
// (POSTGRES_HOST, _PORT, _USER, _PASSWORD, _DB, _SSLMODE; unprefixed, and
// read with the prefix too): they make the database URL when
// DATABASE_URL (or its chart name POSTGRES_DSN) is unset
// (docs/deploy.md, "Deploying with Lerian's chart").
var postgresParts = []string{"POSTGRES_HOST", "POSTGRES_PORT", "POSTGRES_USER", "POSTGRES_PASSWORD", "POSTGRES_DB", "POSTGRES_SSLMODE"}

// sslModes are libpq's sslmode values.
var sslModes = []string{"disable", "allow", "prefer", "require", "verify-ca", "verify-full"}

// databaseURL reads DATABASE_URL (or POSTGRES_DSN) into v or, when neither
// is set, makes it of the POSTGRES_* parts. With a URL set, parts that
// say otherwise than the URL are named in a warning: the URL is used.
func (r *reader) databaseURL(v *string) {
	r.str("DATABASE_URL", v)
	r.note("POSTGRES_PORT", strconv.Itoa(DefaultPostgresPort))
	parts := map[string]string{}
	for _, name := range postgresParts {
		var s string
		var ok bool
		if name == "POSTGRES_PASSWORD" {
			s, ok = r.postgresPassword()
		} else {
			s, ok = r.authRaw(name)
		}
		if ok {
			parts[name] = s
		}
	}
	if *v != "" {
		if differ := partsDiffer(*v, parts); len(differ) > 0 {
			r.warn("%s are set and differ from the database URL (%sDATABASE_URL or %sPOSTGRES_DSN), which is used: they make the URL only when none is set",
				strings.Join(differ, ", "), Prefix, Prefix)
		}
		return
	}
	if len(parts) == 0 || r.bad["POSTGRES_PASSWORD"] {
		return
	}
	host, ok := parts["POSTGRES_HOST"]
	if !ok {
		r.failPart("POSTGRES_HOST", "required to make the database URL from POSTGRES_* (%s set), unless %sDATABASE_URL or %sPOSTGRES_DSN is", strings.Join(setNames(parts), ", "), Prefix, Prefix)
		return
	}
	port := strconv.Itoa(DefaultPostgresPort)
	if p, ok := parts["POSTGRES_PORT"]; ok {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			r.failPart("POSTGRES_PORT", "must be a port number from 1 to 65535, got %q", p)
			return
		}
		port = p
	}
	u := &url.URL{Scheme: "postgres", Host: net.JoinHostPort(strings.Trim(host, "[]"), port)}
	if user, ok := parts["POSTGRES_USER"]; ok {
		if pw, ok := parts["POSTGRES_PASSWORD"]; ok {
			u.User = url.UserPassword(user, pw)
		} else {
			u.User = url.User(user)
		}
	} else if _, ok := parts["POSTGRES_PASSWORD"]; ok {
		r.failPart("POSTGRES_USER", "required with POSTGRES_PASSWORD")
		return
	}
	if db, ok := parts["POSTGRES_DB"]; ok {
		u.Path = "/" + db
	}
	if mode, ok := parts["POSTGRES_SSLMODE"]; ok {
		if !slices.Contains(sslModes, mode) {
			r.failPart("POSTGRES_SSLMODE", "must be one of %s, got %q", strings.Join(sslModes, ", "), mode)
			return
		}
		u.RawQuery = url.Values{"sslmode": {mode}}.Encode()
	}
	*v = u.String()
	r.fromParts = true
}

// postgresPassword reads POSTGRES_PASSWORD: with the prefix (or its
// _FILE), else without, else the file POSTGRES_PASSWORD_FILE names (the
// convention of PostgreSQL's own image). Its value is never shown.
func (r *reader) postgresPassword() (string, bool) {
	const name = "POSTGRES_PASSWORD"
	if s, ok := r.authRaw(name); ok || r.bad[name] {
		return s, ok
	}
	path := strings.TrimSpace(r.getenv(name + "_FILE"))
	if path == "" {
		return "", false
	}
	if r.bare == nil {
		r.bare = make(map[string]bool)
	}
	r.bare[name] = true
	if r.from == nil {
		r.from = make(map[string]string)
	}
	r.from[name] = name + "_FILE"
	b, err := os.ReadFile(path)
	if err != nil {
		r.fail(name, "cannot read %q: %s", path, readProblem(err))
		return "", false
	}
	s := strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
	if s == "" {
		r.fail(name, "the file %q is empty", path)
		return "", false
	}
	return s, true
}

// partsDiffer names the parts set that say otherwise than dsn. A part
// the URL leaves out (a port, an sslmode) is compared with what a client
// would use for it; the password is compared, never shown.
func partsDiffer(dsn string, parts map[string]string) []string {
	u, err := url.Parse(dsn)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return nil
	}
	pw, _ := u.User.Password()
	port := u.Port()
	if port == "" {
		port = strconv.Itoa(DefaultPostgresPort)
	}
	have := map[string]string{
		"POSTGRES_HOST":     u.Hostname(),
		"POSTGRES_PORT":     port,
		"POSTGRES_USER":     u.User.Username(),
		"POSTGRES_PASSWORD": pw,
		"POSTGRES_DB":       strings.TrimPrefix(u.Path, "/"),
		"POSTGRES_SSLMODE":  u.Query().Get("sslmode"),
	}
	var out []string
	for _, name := range postgresParts {
		v, ok := parts[name]
		if !ok {
			continue
		}
		h := have[name]
		same := v == h
		switch name {
		case "POSTGRES_HOST":
			same = strings.EqualFold(strings.Trim(v, "[]"), h)
		case "POSTGRES_SSLMODE":
			same = v == h || h == "" && v == "prefer" // libpq's default
		}
		if !same {
			out = append(out, name)
		}
	}
	return out
}

func setNames(parts map[string]string) []string {
	var out []string
	for _, name := range postgresParts {
		if _, ok := parts[name]; ok {
			out = append(out, name)
		}
	}
	return out
}

// failPart reports a problem with a part under the name it was set by:
// the chart's, without the prefix, unless it came with the prefix.
func (r *reader) failPart(name, format string, args ...any) {
	if strings.TrimSpace(r.getenv(Prefix+name)) == "" {
		if r.bare == nil {
			r.bare = make(map[string]bool)
		}
		r.bare[name] = true
	}
	r.fail(name, format, args...)
}
