package config

import (
	"regexp"
	"strings"
	"testing"
)

// docs/lerian-platform.md: the producers' DLQ topics are read by a group of
// their own, named after ENV like KAFKA_GROUP, over a regular expression that
// must compile.
func TestLoad_DLQTopicsAndGroup(t *testing.T) {
	c, err := Load(Serve, env(serveEnv()))
	if err != nil {
		t.Fatal(err)
	}
	if c.Ingest.DLQTopicsRegex != `^lerian\.streaming\..+\.dlq$` || c.Ingest.DLQGroup != "streaming-hub-dlq.local" {
		t.Fatalf("DLQ defaults: regex %q, group %q", c.Ingest.DLQTopicsRegex, c.Ingest.DLQGroup)
	}
	re := regexp.MustCompile(c.Ingest.DLQTopicsRegex)
	if !re.MatchString("lerian.streaming.ledger.dlq") || re.MatchString("lerian.streaming.ledger") || re.MatchString("lerian.streaming.ledger.commands") {
		t.Fatalf("default DLQ regex matches the wrong topics")
	}

	e := serveEnv()
	e["STREAMING_HUB_ENV"] = "prod"
	if c, _ := Load(Serve, env(e)); c.Ingest.DLQGroup != "streaming-hub-dlq.prod" {
		t.Fatalf("DLQ group = %q, want streaming-hub-dlq.prod", c.Ingest.DLQGroup)
	}
	e["STREAMING_HUB_DLQ_GROUP"] = "mine"
	e["STREAMING_HUB_DLQ_TOPICS_REGEX"] = `^dead\..+$`
	if c, err := Load(Serve, env(e)); err != nil || c.Ingest.DLQGroup != "mine" || c.Ingest.DLQTopicsRegex != `^dead\..+$` {
		t.Fatalf("DLQ group %q, regex %q, err %v", c.Ingest.DLQGroup, c.Ingest.DLQTopicsRegex, err)
	}

	e["STREAMING_HUB_DLQ_TOPICS_REGEX"] = `(`
	_, err = Load(Serve, env(e))
	if err == nil || !strings.Contains(err.Error(), "STREAMING_HUB_DLQ_TOPICS_REGEX: not a valid regular expression") {
		t.Fatalf("bad DLQ regex: %v", err)
	}
}
