package hub

import (
	"bytes"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"regexp"
	"strings"
	"unicode/utf8"
)

// Limits of Google Cloud Pub/Sub destinations
// (docs/brokers.md).
const (
	MaxServiceAccountBytes = 16 << 10
)

var (
	// pubsubProject is a project ID (6 to 30 of a-z 0-9 -, a letter
	// first, no hyphen last), or a legacy domain-scoped one
	// (example.com:my-project).
	pubsubProject = regexp.MustCompile(`^([a-z0-9][a-z0-9.-]{0,61}[a-z0-9]:)?[a-z][a-z0-9-]{4,28}[a-z0-9]$`)
	// pubsubTopic is a topic ID: 3 to 255 of letters, digits and
	// - . _ ~ % +, a letter first.
	pubsubTopic = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9._~%+-]{2,254}$`)
)

// Google's token endpoints: a key naming another would have the hub post
// signed assertions to a host of the tenant's choosing.
var googleTokenURIs = map[string]bool{
	"":                                    true,
	"https://oauth2.googleapis.com/token": true,
	"https://accounts.google.com/o/oauth2/token": true,
}

// ValidatePubSub checks a Pub/Sub destination: its project ID, its topic
// ID and its service account key (sa, the JSON as given); each 400 names
// its field.
func ValidatePubSub(d Destination, sa string) error {
	if d.Project == "" {
		return Errorf(EINVALID, "destination.project: required")
	}
	if !pubsubProject.MatchString(d.Project) {
		return Errorf(EINVALID, "destination.project: %q is not a project ID (6 to 30 of a-z 0-9 -, starting with a letter, not ending with -)", d.Project)
	}
	if d.Topic == "" {
		return Errorf(EINVALID, "destination.topic: required")
	}
	if strings.HasPrefix(d.Topic, "projects/") {
		return Errorf(EINVALID, "destination.topic: the topic's ID, not its full name (the project goes in destination.project)")
	}
	if !pubsubTopic.MatchString(d.Topic) || strings.HasPrefix(strings.ToLower(d.Topic), "goog") {
		return Errorf(EINVALID, "destination.topic: %q is not a topic ID (3 to 255 of letters, digits and - . _ ~ %% +, starting with a letter, not with goog)", d.Topic)
	}
	return validateServiceAccount(sa)
}

// validateServiceAccount checks a service account key: a JSON object of
// type service_account with a client_email and an RSA private_key in PEM,
// Google's token_uri (or none) and universe (or none). Other kinds of
// credentials (external accounts, authorized users) are refused: their
// files name URLs and commands the hub would follow.
func validateServiceAccount(sa string) error {
	if strings.TrimSpace(sa) == "" {
		return Errorf(EINVALID, "destination.credentials: required (a service account key, JSON)")
	}
	if len(sa) > MaxServiceAccountBytes {
		return Errorf(EINVALID, "destination.credentials: at most %d bytes", MaxServiceAccountBytes)
	}
	if !utf8.ValidString(sa) {
		return Errorf(EINVALID, "destination.credentials: must be valid UTF-8")
	}
	var key struct {
		Type           string `json:"type"`
		ClientEmail    string `json:"client_email"`
		PrivateKey     string `json:"private_key"`
		TokenURI       string `json:"token_uri"`
		UniverseDomain string `json:"universe_domain"`
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(sa)))
	if err := dec.Decode(&key); err != nil || dec.More() {
		return Errorf(EINVALID, "destination.credentials: not a service account key (a JSON object)")
	}
	if key.Type != "service_account" {
		return Errorf(EINVALID, "destination.credentials: type must be service_account")
	}
	if key.ClientEmail == "" || !PlainText(key.ClientEmail) || !strings.Contains(key.ClientEmail, "@") {
		return Errorf(EINVALID, "destination.credentials: client_email is required")
	}
	if !googleTokenURIs[key.TokenURI] {
		return Errorf(EINVALID, "destination.credentials: token_uri must be https://oauth2.googleapis.com/token")
	}
	if key.UniverseDomain != "" && key.UniverseDomain != "googleapis.com" {
		return Errorf(EINVALID, "destination.credentials: universe_domain must be googleapis.com")
	}
	block, _ := pem.Decode([]byte(key.PrivateKey))
	if block == nil {
		return Errorf(EINVALID, "destination.credentials: private_key is not a PEM key")
	}
	if _, err := x509.ParsePKCS8PrivateKey(block.Bytes); err != nil {
		if _, err := x509.ParsePKCS1PrivateKey(block.Bytes); err != nil {
			return Errorf(EINVALID, "destination.credentials: private_key is not a private key")
		}
	}
	return nil
}
