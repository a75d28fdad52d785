// Package kafkasec turns the Kafka security configuration (TLS, mutual TLS,
// SASL PLAIN and SCRAM; docs/security.md) into franz-go client options, and
// names the cause when a broker refuses the hub's certificate or password.
package kafkasec

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/lerianstudio/streaming-hub/internal/config"
)

// Security is one client's TLS and SASL: the options that configure it and
// a watch on its connections that keeps the cause of the latest refusal.
type Security struct {
	k   config.Kafka
	log *slog.Logger

	mu       sync.Mutex
	cause    error          // the latest refusal; nil once a connection succeeds
	inSASL   map[string]int // broker address -> SASL exchanges begun, not finished
	reported string         // the cause last logged, so each is logged once
	// own is a destination's own TLS (its client certificate, CAs and
	// version), used instead of the one k describes when set.
	own *tls.Config
}

// ForDestination is the security of a tenant's Kafka destination: TLS (with
// caCert's CAs instead of the system roots when not nil) and SASL, given as
// values, so the destination driver needs no configuration of the hub's.
func ForDestination(tls bool, caCert []byte, mechanism, username, password string, logger *slog.Logger) (*Security, error) {
	return New(config.Kafka{TLS: tls, CACert: caCert, SASLMechanism: mechanism,
		SASLUsername: username, SASLPassword: password}, logger)
}

// ForDestinationTLS is ForDestination with tc, a destination's own TLS
// settings (mutual TLS, its CAs, its lowest version), as its TLS.
func ForDestinationTLS(tc *tls.Config, mechanism, username, password string, logger *slog.Logger) (*Security, error) {
	s, err := ForDestination(true, nil, mechanism, username, password, logger)
	if err != nil {
		return nil, err
	}
	s.own = tc
	return s, nil
}

// New checks k and prepares its options; logger (nil discards) gets one
// line each time the cause of refused connections changes.
func New(k config.Kafka, logger *slog.Logger) (*Security, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s := &Security{k: k, log: logger, inSASL: make(map[string]int)}
	if _, err := s.tlsConfig(); err != nil {
		return nil, err
	}
	if _, err := s.mechanism(); err != nil {
		return nil, err
	}
	return s, nil
}

// Opts are the franz-go options: TLS dialing, the SASL mechanism and the
// connection watch. Nothing at all for plaintext without SASL but the watch.
func (s *Security) Opts() []kgo.Opt {
	opts := []kgo.Opt{kgo.WithHooks(s)}
	if tc, _ := s.tlsConfig(); tc != nil {
		opts = append(opts, kgo.DialTLSConfig(tc))
	}
	if m, _ := s.mechanism(); m != nil {
		opts = append(opts, kgo.SASL(m))
	}
	return opts
}

// OptsWithDialer are Opts for a client that dials through dial (a
// tenant's Kafka destination: the SSRF-safe dialer); TLS, when on, runs
// over dial's connections, verifying the broker's name.
func (s *Security) OptsWithDialer(dial func(ctx context.Context, network, host string) (net.Conn, error)) []kgo.Opt {
	tc, _ := s.tlsConfig()
	opts := []kgo.Opt{kgo.WithHooks(s), kgo.Dialer(func(ctx context.Context, network, host string) (net.Conn, error) {
		conn, err := dial(ctx, network, host)
		if err != nil || tc == nil {
			return conn, err
		}
		c := tc.Clone()
		if c.ServerName == "" {
			c.ServerName, _, _ = net.SplitHostPort(host)
		}
		tconn := tls.Client(conn, c)
		if err := tconn.HandshakeContext(ctx); err != nil {
			conn.Close()
			return nil, err
		}
		return tconn, nil
	})}
	if m, _ := s.mechanism(); m != nil {
		opts = append(opts, kgo.SASL(m))
	}
	return opts
}

// tlsConfig is nil without TLS. Verification is never skipped: there is no
// option for it.
func (s *Security) tlsConfig() (*tls.Config, error) {
	if s.own != nil {
		return s.own, nil
	}
	if !s.k.TLS {
		return nil, nil
	}
	c := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: s.k.ServerName}
	if s.k.CACert != nil {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(s.k.CACert) {
			return nil, errors.New(config.Prefix + "KAFKA_CA_CERT: holds no valid PEM certificate")
		}
		c.RootCAs = pool
	}
	if s.k.TLSCert != nil || s.k.TLSKey != nil {
		cert, err := tls.X509KeyPair(s.k.TLSCert, s.k.TLSKey)
		if err != nil {
			return nil, fmt.Errorf("%sKAFKA_TLS_CERT, %sKAFKA_TLS_KEY: %w", config.Prefix, config.Prefix, err)
		}
		c.Certificates = []tls.Certificate{cert}
	}
	return c, nil
}

func (s *Security) mechanism() (sasl.Mechanism, error) {
	var m sasl.Mechanism
	switch user, pass := s.k.SASLUsername, s.k.SASLPassword; s.k.SASLMechanism {
	case "":
		return nil, nil
	case config.SASLPlain:
		m = plain.Auth{User: user, Pass: pass}.AsMechanism()
	case config.SASLScram256:
		m = scram.Auth{User: user, Pass: pass}.AsSha256Mechanism()
	case config.SASLScram512:
		m = scram.Auth{User: user, Pass: pass}.AsSha512Mechanism()
	default:
		return nil, fmt.Errorf("%sKAFKA_SASL_MECHANISM: unsupported %q", config.Prefix, s.k.SASLMechanism)
	}
	return watched{m, s}, nil
}

// Cause is why the latest connection to a broker was refused (a failed SASL
// handshake, a certificate check), as one line starting "kafka: ", or nil
// when the latest connection succeeded or failed for another reason.
func (s *Security) Cause() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cause
}

// OnBrokerConnect is franz-go's hook after each connection attempt: the
// dial, the TLS handshake, ApiVersions and SASL.
func (s *Security) OnBrokerConnect(meta kgo.BrokerMetadata, _ time.Duration, _ net.Conn, err error) {
	addr := net.JoinHostPort(meta.Host, strconv.Itoa(int(meta.Port)))
	s.mu.Lock()
	inSASL := s.inSASL[addr] > 0
	delete(s.inSASL, addr)
	if err == nil {
		recovered := s.reported != ""
		s.cause, s.reported = nil, ""
		s.mu.Unlock()
		if recovered {
			s.log.Info("kafka connection accepted again", "broker", addr)
		}
		return
	}
	cause := s.describe(err, inSASL)
	if cause == nil {
		s.mu.Unlock()
		return
	}
	s.cause = cause
	fresh := cause.Error() != s.reported
	s.reported = cause.Error()
	s.mu.Unlock()
	if fresh {
		s.log.Error("kafka connection refused", "cause", cause.Error(), "broker", addr, "err", err.Error())
	}
}

// The exact texts of the causes docs/security.md names.
const (
	CauseSASL      = "kafka: SASL authentication failed"
	CauseUnknownCA = "kafka: certificate signed by unknown authority"
)

// describe names the cause of a refused connection; nil when err is not a
// matter of certificates or credentials (a broker down, a timeout). It
// never includes the password.
func (s *Security) describe(err error, inSASL bool) error {
	var unknownCA x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var invalid x509.CertificateInvalidError
	var header tls.RecordHeaderError
	text := err.Error()
	switch {
	case errors.As(err, &unknownCA):
		return fmt.Errorf("%s (the broker's certificate is not signed by a CA of %sKAFKA_CA_CERT, or of the system roots when it is empty)", CauseUnknownCA, config.Prefix)
	case errors.As(err, &hostname):
		return fmt.Errorf("kafka: certificate is not valid for %s (set %sKAFKA_TLS_SERVER_NAME to a name it holds)", hostname.Host, config.Prefix)
	case errors.As(err, &invalid):
		return fmt.Errorf("kafka: the broker's certificate is invalid: %s", invalid.Error())
	case errors.As(err, &header):
		return fmt.Errorf("kafka: TLS handshake failed: the broker does not speak TLS there (is %sKAFKA_TLS_ENABLED right?)", config.Prefix)
	case strings.Contains(text, "tls: certificate required"),
		strings.Contains(text, "tls: bad certificate") && s.k.TLSCert == nil:
		return fmt.Errorf("kafka: the broker requires a client certificate (set %sKAFKA_TLS_CERT and %sKAFKA_TLS_KEY)", config.Prefix, config.Prefix)
	case strings.Contains(text, "tls: unknown certificate authority"),
		strings.Contains(text, "tls: bad certificate"),
		strings.Contains(text, "tls: certificate expired"):
		return fmt.Errorf("kafka: the broker refused the client certificate of %sKAFKA_TLS_CERT", config.Prefix)
	case errors.Is(err, kerr.UnsupportedSaslMechanism):
		return fmt.Errorf("kafka: the broker does not offer SASL %s (%sKAFKA_SASL_MECHANISM)", s.k.SASLMechanism, config.Prefix)
	case errors.Is(err, kerr.SaslAuthenticationFailed), errors.Is(err, kerr.IllegalSaslState), inSASL:
		return fmt.Errorf("%s (%s as user %q: check %sKAFKA_SASL_USERNAME and %sKAFKA_SASL_PASSWORD)",
			CauseSASL, s.k.SASLMechanism, s.k.SASLUsername, config.Prefix, config.Prefix)
	}
	var eof *kgo.ErrFirstReadEOF
	if errors.As(err, &eof) {
		return fmt.Errorf("kafka: the broker closed the connection at once: %s", eof.Error())
	}
	return nil
}

// watched is a SASL mechanism that tells its Security when an exchange
// begins and when it ends well: an error on a connection whose exchange
// did not end well is a failed authentication, whatever the broker said
// (some brokers close the connection instead of answering).
type watched struct {
	sasl.Mechanism
	s *Security
}

func (w watched) Authenticate(ctx context.Context, host string) (sasl.Session, []byte, error) {
	sess, first, err := w.Mechanism.Authenticate(ctx, host)
	if err != nil {
		return nil, nil, err
	}
	w.s.mu.Lock()
	w.s.inSASL[host]++
	w.s.mu.Unlock()
	return watchedSession{sess, w.s, host}, first, nil
}

type watchedSession struct {
	sasl.Session
	s    *Security
	host string
}

func (ws watchedSession) Challenge(resp []byte) (bool, []byte, error) {
	done, next, err := ws.Session.Challenge(resp)
	if done && err == nil {
		ws.s.mu.Lock()
		if ws.s.inSASL[ws.host] > 0 {
			ws.s.inSASL[ws.host]--
		}
		ws.s.mu.Unlock()
	}
	return done, next, err
}
