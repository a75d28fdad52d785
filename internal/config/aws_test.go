package config

import (
	"strings"
	"testing"
)

// The AWS setup link's settings (docs/aws.md): both unset by default (no
// link); a principal that is no IAM role or user ARN, a template URL that
// is not https, or a template without the principal its role trusts stop
// the start naming the variable.
func TestLoad_AWSSetup(t *testing.T) {
	if c, err := Load(Serve, env(serveEnv())); err != nil || c.AWS.SetupOffered() || Defaults(Serve).AWS != (AWS{}) {
		t.Fatalf("default: %+v, %v", c.AWS, err)
	}
	e := serveEnv()
	e["STREAMING_HUB_AWS_HUB_PRINCIPAL_ARN"] = "arn:aws:iam::123456789012:role/streaming-hub"
	e["STREAMING_HUB_AWS_SETUP_TEMPLATE_URL"] = "https://lerian-templates.s3.amazonaws.com/streaming-hub-role.yaml"
	c, err := Load(Serve, env(e))
	if err != nil || !c.AWS.SetupOffered() || c.AWS.HubPrincipalARN != "arn:aws:iam::123456789012:role/streaming-hub" {
		t.Fatalf("both set: %+v, %v", c.AWS, err)
	}
	for _, bad := range []struct{ principal, template, names string }{
		{"arn:aws:s3:::bucket", "", "AWS_HUB_PRINCIPAL_ARN"},
		{"streaming-hub", "", "AWS_HUB_PRINCIPAL_ARN"},
		{"arn:aws:iam::123456789012:role/streaming-hub", "http://templates.example.com/t.yaml", "AWS_SETUP_TEMPLATE_URL"},
		{"", "https://templates.example.com/t.yaml", "AWS_SETUP_TEMPLATE_URL: needs STREAMING_HUB_AWS_HUB_PRINCIPAL_ARN"},
	} {
		e := serveEnv()
		e["STREAMING_HUB_AWS_HUB_PRINCIPAL_ARN"], e["STREAMING_HUB_AWS_SETUP_TEMPLATE_URL"] = bad.principal, bad.template
		if _, err := Load(Serve, env(e)); err == nil || !strings.Contains(err.Error(), "STREAMING_HUB_"+bad.names) {
			t.Errorf("%+v: %v, want an error naming %s", bad, err, bad.names)
		}
	}
}
