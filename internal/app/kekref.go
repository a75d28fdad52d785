package app

import (
	"context"
	"fmt"
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
// does (base64 of at least 32 bytes); a SecretBinary holds its bytes.
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
	out, err := secretsmanager.NewFromConfig(cfg).GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(src.Ref)})
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
	case len(out.SecretBinary) >= 32:
		return out.SecretBinary, nil
	case out.SecretBinary != nil:
		return nil, &config.Error{Var: "KEK_REF", Problem: fmt.Sprintf("%s: its SecretBinary must be at least 32 bytes, got %d", src, len(out.SecretBinary))}
	}
	return nil, &config.Error{Var: "KEK_REF", Problem: fmt.Sprintf("%s: the secret holds no value", src)}
}
