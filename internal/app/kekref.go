package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/lerianstudio/streaming-hub/internal/config"
)

// kekFetchTimeout bounds reading the KEK from AWS Secrets Manager at start.
const kekFetchTimeout = 30 * time.Second

// ResolveKEK fetches the KEK when its source is fetched at start
// (STREAMING_HUB_KEK_SOURCE=secretsmanager): GetSecretValue of the secret
// STREAMING_HUB_KEK_REF names, through the AWS SDK's default credential
// chain and region (AWS_REGION, AWS_ACCESS_KEY_ID, a web identity, an
// instance role, ...; AWS_ENDPOINT_URL_SECRETS_MANAGER or AWS_ENDPOINT_URL
// point it elsewhere). A SecretString holds the KEK as STREAMING_HUB_KEK
// does (base64 of exactly 32 bytes); a SecretBinary holds its 32 bytes.
// Other sources return nil: Load has read them. Errors name
// STREAMING_HUB_KEK_REF and the secret, never the key.
func ResolveKEK(ctx context.Context, src config.KEKSource) ([]byte, error) {
	if !src.Fetched() {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, kekFetchTimeout)
	defer cancel()
	cfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, &config.Error{Var: "KEK_REF", Problem: fmt.Sprintf("%s: the AWS configuration: %s", src, err)}
	}
	// The answer is read within maxSecretAnswer: a secret of megabytes is
	// refused, not held (Secrets Manager's own limit is 64 KiB).
	sm := secretsmanager.NewFromConfig(cfg, func(o *secretsmanager.Options) {
		o.HTTPClient = boundedBodies{base: o.HTTPClient, max: maxSecretAnswer}
	})
	out, err := sm.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(src.Ref)})
	if errors.Is(err, errSecretTooLarge) {
		return nil, &config.Error{Var: "KEK_REF", Problem: fmt.Sprintf("%s: its answer is larger than %d KiB: a KEK is 32 bytes", src, maxSecretAnswer>>10)}
	}
	if err != nil {
		return nil, fmt.Errorf("%sKEK_REF: cannot read %s: %w", config.Prefix, src, err)
	}
	switch {
	case out.SecretString != nil:
		k, err := config.DecodeKEK([]byte(*out.SecretString))
		if err != nil {
			return nil, &config.Error{Var: "KEK_REF", Problem: fmt.Sprintf("%s: its SecretString %s", src, err)}
		}
		return k, nil
	case len(out.SecretBinary) == config.KEKSize:
		return out.SecretBinary, nil
	case out.SecretBinary != nil:
		return nil, &config.Error{Var: "KEK_REF", Problem: fmt.Sprintf("%s: its SecretBinary must be exactly %d bytes, got %d", src, config.KEKSize, len(out.SecretBinary))}
	}
	return nil, &config.Error{Var: "KEK_REF", Problem: fmt.Sprintf("%s: the secret holds no value", src)}
}

// maxSecretAnswer bounds the answer to GetSecretValue: a 32-byte KEK is a
// few hundred bytes of JSON, and Secrets Manager's largest secret 64 KiB.
const maxSecretAnswer = 256 << 10

var errSecretTooLarge = errors.New("the answer is larger than its bound")

// boundedBodies reads at most max bytes of each answer's body.
type boundedBodies struct {
	base secretsmanager.HTTPClient
	max  int64
}

func (b boundedBodies) Do(r *http.Request) (*http.Response, error) {
	resp, err := b.base.Do(r)
	if err != nil {
		return nil, err
	}
	if resp.ContentLength > b.max {
		resp.Body.Close()
		return nil, errSecretTooLarge
	}
	resp.Body = &boundedBody{ReadCloser: resp.Body, left: b.max}
	return resp, nil
}

type boundedBody struct {
	io.ReadCloser
	left int64
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, errSecretTooLarge
	}
	if int64(len(p)) > b.left {
		p = p[:b.left+1] // one more: whether there is more at all
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		return n + int(b.left), errSecretTooLarge
	}
	return n, err
}
