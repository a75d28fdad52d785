package config

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"net/url"
	"os"
	"strings"
)

// SASL mechanisms the hub speaks.
const (
	SASLPlain     = "PLAIN"
	SASLScram256  = "SCRAM-SHA-256"
	SASLScram512  = "SCRAM-SHA-512"
	envProduction = "production"
)

// LoadKafka reads only the Kafka security variables (docs/security.md), as
// Load does, for the commands that talk to Kafka without being a hub
// (`streaming-hub produce`).
func LoadKafka(getenv func(string) string) (Kafka, error) {
	r := reader{getenv: getenv}
	k := Defaults(Serve).Kafka
	r.kafka(&k)
	if len(r.errs) > 0 {
		return Kafka{}, r.errs
	}
	return k, nil
}

// kafka reads the Kafka security variables into k and checks that they
// make sense together. SASL PLAIN without TLS is refused in every
// environment: it would send the password in clear.
func (r *reader) kafka(k *Kafka) {
	r.boolean("KAFKA_TLS_ENABLED", &k.TLS)
	k.CACert = r.pem("KAFKA_CA_CERT")
	k.TLSCert = r.pem("KAFKA_TLS_CERT")
	k.TLSKey = r.pem("KAFKA_TLS_KEY")
	r.str("KAFKA_TLS_SERVER_NAME", &k.ServerName)
	if m, ok := r.raw("KAFKA_SASL_MECHANISM"); ok {
		switch up := strings.ToUpper(m); up {
		case SASLPlain, SASLScram256, SASLScram512:
			k.SASLMechanism = up
		default:
			r.fail("KAFKA_SASL_MECHANISM", "must be one of PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, got %q", m)
		}
	}
	r.str("KAFKA_SASL_USERNAME", &k.SASLUsername)
	r.str("KAFKA_SASL_PASSWORD", &k.SASLPassword)
	r.boolean("ALLOW_INSECURE_KAFKA", &k.AllowInsecure)

	if !k.TLS && !r.bad["KAFKA_TLS_ENABLED"] {
		// A certificate without TLS would be ignored and the connection
		// plaintext: refuse rather than surprise.
		for _, name := range []string{"KAFKA_CA_CERT", "KAFKA_TLS_CERT", "KAFKA_TLS_KEY", "KAFKA_TLS_SERVER_NAME"} {
			if _, set := r.raw(name); set && !r.bad[name] {
				r.fail(name, "set, but %sKAFKA_TLS_ENABLED is not true: the connection would be plaintext", Prefix)
			}
		}
	}
	switch {
	case r.bad["KAFKA_TLS_CERT"] || r.bad["KAFKA_TLS_KEY"]:
	case k.TLSCert != nil && k.TLSKey == nil:
		r.fail("KAFKA_TLS_KEY", "required with %sKAFKA_TLS_CERT (the client certificate's private key)", Prefix)
	case k.TLSCert == nil && k.TLSKey != nil:
		r.fail("KAFKA_TLS_CERT", "required with %sKAFKA_TLS_KEY (the client certificate)", Prefix)
	case k.TLSCert != nil:
		if _, err := tls.X509KeyPair(k.TLSCert, k.TLSKey); err != nil {
			r.fail("KAFKA_TLS_CERT", "does not match %sKAFKA_TLS_KEY: %s", Prefix, err)
		}
	}
	if k.CACert != nil && !r.bad["KAFKA_CA_CERT"] && !x509.NewCertPool().AppendCertsFromPEM(k.CACert) {
		r.fail("KAFKA_CA_CERT", "holds no valid PEM certificate")
	}

	if r.bad["KAFKA_SASL_MECHANISM"] {
		return
	}
	if k.SASLMechanism == "" {
		for _, name := range []string{"KAFKA_SASL_USERNAME", "KAFKA_SASL_PASSWORD"} {
			if _, set := r.raw(name); set && !r.bad[name] {
				r.fail(name, "set, but %sKAFKA_SASL_MECHANISM is empty: no SASL would be used", Prefix)
			}
		}
		return
	}
	if k.SASLUsername == "" && !r.bad["KAFKA_SASL_USERNAME"] {
		r.fail("KAFKA_SASL_USERNAME", "required with %sKAFKA_SASL_MECHANISM=%s", Prefix, k.SASLMechanism)
	}
	if k.SASLPassword == "" && !r.bad["KAFKA_SASL_PASSWORD"] {
		r.fail("KAFKA_SASL_PASSWORD", "required with %sKAFKA_SASL_MECHANISM=%s", Prefix, k.SASLMechanism)
	}
	if k.SASLMechanism == SASLPlain && !k.TLS && !k.AllowInsecure && !r.bad["KAFKA_TLS_ENABLED"] {
		r.fail("KAFKA_SASL_MECHANISM", "PLAIN without TLS sends the password in clear: set %sKAFKA_TLS_ENABLED=true (or %sALLOW_INSECURE_KAFKA=true to accept it)", Prefix, Prefix)
	}
}

// pem reads a PEM variable: the PEM itself (a value starting with
// -----BEGIN, whose line breaks may be written \n) or the path of a file
// holding it. Nil when unset or bad; the contents are never echoed.
func (r *reader) pem(name string) []byte {
	v, ok := r.raw(name)
	if !ok {
		return nil
	}
	if strings.HasPrefix(v, "-----BEGIN") {
		if !strings.Contains(v, "\n") {
			v = strings.ReplaceAll(v, `\n`, "\n")
		}
		if b, _ := pem.Decode([]byte(v)); b == nil {
			r.fail(name, "is not valid PEM")
			return nil
		}
		return []byte(v)
	}
	b, err := os.ReadFile(v)
	if err != nil {
		r.fail(name, "neither PEM (-----BEGIN ...) nor a readable file: %s", err)
		return nil
	}
	if blk, _ := pem.Decode(b); blk == nil {
		r.fail(name, "file %s holds no PEM", v)
		return nil
	}
	return b
}

// checkProduction fails closed with ENV=production (docs/security.md): no
// plaintext Kafka unless ALLOW_INSECURE_KAFKA, no PostgreSQL without TLS
// unless ALLOW_INSECURE_DB_TLS.
func (c Config) checkProduction(r *reader) {
	if !strings.EqualFold(c.Env, envProduction) {
		return
	}
	if c.Role.Ingests() && !c.Kafka.TLS && !c.Kafka.AllowInsecure && !r.bad["KAFKA_TLS_ENABLED"] {
		r.fail("KAFKA_TLS_ENABLED", "ENV=production refuses plaintext Kafka: set it to true (or %sALLOW_INSECURE_KAFKA=true to accept plaintext)", Prefix)
	}
	if r.bad["DATABASE_URL"] || c.AllowInsecureDBTLS || !strings.HasPrefix(c.DatabaseURL, "postgres") {
		return
	}
	switch mode := sslMode(c.DatabaseURL); mode {
	case "require", "verify-ca", "verify-full":
	default:
		if mode == "" {
			mode = "unset (libpq's prefer)"
		}
		if r.fromParts {
			r.failPart("POSTGRES_SSLMODE", "ENV=production needs require, verify-ca or verify-full, got %s (or set %sALLOW_INSECURE_DB_TLS=true)", mode, Prefix)
			return
		}
		r.fail("DATABASE_URL", "ENV=production needs sslmode=require, verify-ca or verify-full, got sslmode %s (or set %sALLOW_INSECURE_DB_TLS=true)", mode, Prefix)
	}
}

// sslMode is the sslmode of a PostgreSQL URL, "" when unset or unreadable.
func sslMode(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		return ""
	}
	return u.Query().Get("sslmode")
}

// DatabaseURL reads only STREAMING_HUB_DATABASE_URL or its alias
// POSTGRES_DSN (or, neither set, the POSTGRES_* parts), for the commands that open the database without being a
// hub (`streaming-hub migrate`); "" when neither is set.
func DatabaseURL(getenv func(string) string) (string, error) {
	r := reader{getenv: getenv}
	var url string
	r.databaseURL(&url)
	if len(r.errs) > 0 {
		return "", r.errs
	}
	return url, nil
}
