package config

import (
	"regexp"
	"strings"
)

// kafkaTopic is the name Kafka accepts for a topic.
var kafkaTopic = regexp.MustCompile(`^[a-zA-Z0-9._-]{1,249}$`)

// quarantineTopic reads QUARANTINE_TOPIC. Unlike other variables, set
// and empty means something: no quarantine. That needs the environment's
// presence (LoadLookup); through Load, an empty value reads as unset.
func (r *reader) quarantineTopic(v *string) {
	r.note("QUARANTINE_TOPIC", *v)
	if s, ok := r.raw("QUARANTINE_TOPIC"); ok {
		if !kafkaTopic.MatchString(s) || s == "." || s == ".." {
			r.fail("QUARANTINE_TOPIC", "must be a Kafka topic name (1-249 of `a-z A-Z 0-9 . _ -`), got %q", s)
			return
		}
		*v = s
		return
	}
	if r.lookup != nil {
		if s, set := r.lookup(Prefix + "QUARANTINE_TOPIC"); set && strings.TrimSpace(s) == "" {
			*v = ""
		}
	}
}

// LoadLookup is Load with an environment that tells a variable set empty
// from one not set (os.LookupEnv): STREAMING_HUB_QUARANTINE_TOPIC set
// empty turns the quarantine off.
func LoadLookup(mode Mode, lookup func(string) (string, bool)) (Config, error) {
	r := reader{getenv: func(k string) string { v, _ := lookup(k); return v }, lookup: lookup}
	c := loadInto(&r, mode)
	if len(r.errs) > 0 {
		return Config{}, r.errs
	}
	return c, nil
}
