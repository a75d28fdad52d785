package config

import (
	"net/url"

	hub "github.com/lerianstudio/streaming-hub"
)

// AWS is what tenants need to grant the hub a role in their account
// (docs/aws.md): the principal their roles trust and the CloudFormation
// template that makes such a role. Both empty: the setup link is not
// offered (GET /v1/aws/setup answers so), while AWS destinations still
// work with roles made by hand.
type AWS struct {
	// HubPrincipalARN (AWS_HUB_PRINCIPAL_ARN) is the hub's own IAM
	// principal: the role (or user) its default credential chain resolves
	// to, which tenants' trust policies name.
	HubPrincipalARN string
	// SetupTemplateURL (AWS_SETUP_TEMPLATE_URL) is the https URL of the
	// CloudFormation template (deploy/aws/streaming-hub-role.json, in an
	// S3 bucket) the setup link launches.
	SetupTemplateURL string
}

// SetupOffered reports whether the setup link can be made.
func (a AWS) SetupOffered() bool { return a.HubPrincipalARN != "" && a.SetupTemplateURL != "" }

// aws reads the AWS_* variables.
func (r *reader) aws(a *AWS) {
	r.str("AWS_HUB_PRINCIPAL_ARN", &a.HubPrincipalARN)
	if a.HubPrincipalARN != "" {
		if err := hub.ValidatePrincipalARN("value", a.HubPrincipalARN); err != nil {
			r.fail("AWS_HUB_PRINCIPAL_ARN", "must be the hub's IAM role or user ARN (arn:aws:iam::<account>:role/<name>), got %q", a.HubPrincipalARN)
		}
	}
	r.str("AWS_SETUP_TEMPLATE_URL", &a.SetupTemplateURL)
	if s := a.SetupTemplateURL; s != "" {
		u, err := url.Parse(s)
		switch {
		case err != nil || u.Scheme != "https" || u.Host == "" || u.User != nil || u.Fragment != "":
			r.fail("AWS_SETUP_TEMPLATE_URL", "must be an https:// URL of the CloudFormation template (an S3 object's), got %q", s)
		case a.HubPrincipalARN == "" && !r.bad["AWS_HUB_PRINCIPAL_ARN"]:
			r.fail("AWS_SETUP_TEMPLATE_URL", "needs %sAWS_HUB_PRINCIPAL_ARN: the template's role trusts that principal", Prefix)
		}
	}
}
