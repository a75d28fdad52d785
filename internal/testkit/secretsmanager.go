package testkit

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// SecretsManager is an in-process server speaking AWS Secrets Manager's
// JSON protocol for GetSecretValue (X-Amz-Target:
// secretsmanager.GetSecretValue), with secrets the test puts in it.
type SecretsManager struct {
	*httptest.Server
	mu      sync.Mutex
	secrets map[string]smSecret
	// Auth is the Authorization header of each request: the SDK's SigV4
	// signature, naming the access key it used.
	auth []string
}

type smSecret struct {
	str *string
	bin []byte
}

// NewSecretsManager starts the server and points the AWS SDK of this
// process at it through the environment, as an operator would: the
// endpoint in AWS_ENDPOINT_URL_SECRETS_MANAGER (or, with general, in
// AWS_ENDPOINT_URL), AWS_REGION, and static credentials in
// AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY; no shared files, no
// instance metadata. The test must not run in parallel (t.Setenv).
func NewSecretsManager(t testing.TB, general bool) *SecretsManager {
	sm := &SecretsManager{secrets: map[string]smSecret{}}
	sm.Server = httptest.NewServer(http.HandlerFunc(sm.serve))
	t.Cleanup(sm.Close)
	endpoint, other := "AWS_ENDPOINT_URL_SECRETS_MANAGER", "AWS_ENDPOINT_URL"
	if general {
		endpoint, other = other, endpoint
	}
	dir := t.TempDir()
	for k, v := range map[string]string{
		endpoint:                      sm.URL,
		other:                         "",
		"AWS_REGION":                  "us-east-2",
		"AWS_ACCESS_KEY_ID":           "AKIDSTREAMINGHUBTEST",
		"AWS_SECRET_ACCESS_KEY":       "streaming-hub-test-secret-access-key",
		"AWS_CONFIG_FILE":             filepath.Join(dir, "config"),
		"AWS_SHARED_CREDENTIALS_FILE": filepath.Join(dir, "credentials"),
		"AWS_EC2_METADATA_DISABLED":   "true",
	} {
		t.Setenv(k, v)
	}
	return sm
}

// PutString stores a secret whose value is a SecretString.
func (sm *SecretsManager) PutString(name, value string) {
	sm.mu.Lock()
	defer sm.mu.Unlock()
	sm.secrets[name] = smSecret{str: &value}
}

// PutBinary stores a secret whose value is a SecretBinary.
func (sm *SecretsManager) PutBinary(name string, value []byte) {
	sm.mu.Lock()
	defer sm.mu.Unlock()
	sm.secrets[name] = smSecret{bin: value}
}

// Auth is the Authorization header of every request so far.
func (sm *SecretsManager) Auth() []string {
	sm.mu.Lock()
	defer sm.mu.Unlock()
	return append([]string(nil), sm.auth...)
}

func (sm *SecretsManager) serve(w http.ResponseWriter, r *http.Request) {
	sm.mu.Lock()
	sm.auth = append(sm.auth, r.Header.Get("Authorization"))
	sm.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	fail := func(status int, typ, msg string) {
		w.WriteHeader(status)
		json.NewEncoder(w).Encode(map[string]string{"__type": typ, "message": msg})
	}
	if r.Method != http.MethodPost || r.Header.Get("X-Amz-Target") != "secretsmanager.GetSecretValue" ||
		!strings.HasPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 ") {
		fail(400, "InvalidRequestException", "only signed GetSecretValue requests are served here")
		return
	}
	var in struct{ SecretId string }
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		fail(400, "InvalidRequestException", "body: "+err.Error())
		return
	}
	sm.mu.Lock()
	s, ok := sm.secrets[in.SecretId]
	sm.mu.Unlock()
	if !ok {
		fail(400, "ResourceNotFoundException", "Secrets Manager can't find the specified secret.")
		return
	}
	out := map[string]any{
		"ARN":  "arn:aws:secretsmanager:us-east-2:123456789012:secret:" + in.SecretId,
		"Name": in.SecretId, "VersionId": "v1", "VersionStages": []string{"AWSCURRENT"}, "CreatedDate": 1.7e9,
	}
	if s.str != nil {
		out["SecretString"] = *s.str
	} else {
		out["SecretBinary"] = s.bin // []byte: base64 in JSON, as the API writes blobs
	}
	json.NewEncoder(w).Encode(out)
}
