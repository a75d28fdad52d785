// Package reconciler is the topic-drift check (docs/operations.md, "Topic
// drift"): on one replica at a time it compares the topics on the Kafka
// cluster that match the ingest pattern, the topics the hub's consumer
// group is assigned and the topics producers' manifests declare, and
// reports each difference as the streaming_hub_topic_drift gauge, a log
// line when it appears or resolves, and the operational event
// hub.topics.drift.
package reconciler

import (
	"context"
	"fmt"
	"log/slog"
	"regexp"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/config"
	"github.com/lerianstudio/streaming-hub/internal/manifest"
	"github.com/lerianstudio/streaming-hub/internal/metrics"
	"github.com/lerianstudio/streaming-hub/internal/store"
)

// LockName is the lock a check runs under: one replica at a time.
const LockName = "reconciler"

// Store is the part of the store the check uses.
type Store interface {
	Exclusive(ctx context.Context, name string, fn func(context.Context) error) (ran bool, err error)
	ListManifests(ctx context.Context) ([]store.ManifestSource, error)
	RecordTopicDrift(ctx context.Context, current []hub.TopicDrift) (store.DriftChanges, error)
}

// Config configures a Reconciler; config.Defaults fills the settings.
type Config struct {
	config.Reconciler
	// TopicsRegex is the ingest pattern (KAFKA_TOPICS_REGEX); .commands
	// and .dlq topics never match, as in ingest.
	TopicsRegex string
	// QuarantineTopic (QUARANTINE_TOPIC) never matches either: ingest
	// never reads the hub's own quarantine.
	QuarantineTopic string
	// Group is the ingest consumer group (KAFKA_GROUP).
	Group string
	// Admin asks the cluster.
	Admin *kadm.Client

	Store   Store
	Metrics *metrics.Metrics
	Logger  *slog.Logger // nil discards
}

// Reconciler runs checks.
type Reconciler struct {
	cfg     Config
	pattern *regexp.Regexp
}

// New returns a Reconciler.
func New(cfg Config) (*Reconciler, error) {
	ch := config.Check{Of: "reconciler.Config"}
	ch.Require("TopicsRegex", cfg.TopicsRegex != "")
	ch.Require("Group", cfg.Group != "")
	ch.Require("Admin", cfg.Admin != nil)
	ch.Require("Store", cfg.Store != nil)
	ch.Require("Metrics", cfg.Metrics != nil)
	config.Positive(&ch, "Interval", cfg.Interval)
	if err := ch.Err(); err != nil {
		return nil, err
	}
	re, err := regexp.Compile(cfg.TopicsRegex)
	if err != nil {
		return nil, fmt.Errorf("reconciler.Config: TopicsRegex: %w", err)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Reconciler{cfg: cfg, pattern: re}, nil
}

// Run checks every Interval until ctx ends; disabled, it returns at once.
// The first check waits an Interval too: a replica just started has not
// joined its consumer group yet, and its topics are not unassigned.
func (r *Reconciler) Run(ctx context.Context) {
	if !r.cfg.Enabled {
		return
	}
	t := time.NewTicker(r.cfg.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if _, _, err := r.Check(ctx); err != nil && ctx.Err() == nil {
			r.cfg.Logger.Error("topic-drift check failed", "err", err)
		}
	}
}

// meaning says what each kind of drift means, for the log.
var meaning = map[string]string{
	hub.DriftUndeclared: "on the cluster and matching the ingest pattern, but in no producer's manifest",
	hub.DriftMissing:    "declared in a producer's manifest, but not on the cluster",
	hub.DriftUnassigned: "on the cluster and matching the ingest pattern, but not assigned to the hub's consumer group",
}

// Check runs one check unless another replica is running one, and
// returns whether it ran and the differences it found (none when the
// consumer group was rebalancing: the check changes nothing then). The gauge then
// holds them; each difference that appeared or resolved since the last
// check (of any replica) is logged once and told to tenants by the store.
// A replica that did not run the check clears its gauge: the one that ran
// reports.
func (r *Reconciler) Check(ctx context.Context) (ran bool, drift []hub.TopicDrift, err error) {
	ran, err = r.cfg.Store.Exclusive(ctx, LockName, func(ctx context.Context) error {
		found, settled, err := r.find(ctx)
		if err != nil {
			return err
		}
		if !settled {
			// Mid-rebalance the group's assignments are partial: this
			// check would report drift that is not there.
			r.cfg.Logger.Debug("topic-drift check skipped: the consumer group is rebalancing", "group", r.cfg.Group)
			return nil
		}
		drift = found
		changes, err := r.cfg.Store.RecordTopicDrift(ctx, drift)
		if err != nil {
			return err
		}
		g := r.cfg.Metrics.TopicDrift
		g.Reset()
		for _, d := range drift {
			g.WithLabelValues(d.Topic, d.Kind).Set(1)
		}
		for _, d := range changes.Detected {
			r.cfg.Logger.Warn("topic drift: "+d.Kind, "topic", d.Topic, "kind", d.Kind, "meaning", meaning[d.Kind])
		}
		for _, d := range changes.Resolved {
			r.cfg.Logger.Info("topic drift resolved: "+d.Kind, "topic", d.Topic, "kind", d.Kind)
		}
		return nil
	})
	if !ran && err == nil {
		r.cfg.Metrics.TopicDrift.Reset()
	}
	return ran, drift, err
}

// find compares the cluster, the group and the manifests; settled is
// false while the group rebalances.
func (r *Reconciler) find(ctx context.Context) (_ []hub.TopicDrift, settled bool, _ error) {
	topics, err := r.cfg.Admin.ListTopics(ctx)
	if err != nil {
		return nil, false, fmt.Errorf("listing the cluster's topics: %w", err)
	}
	if err := topics.Error(); err != nil {
		return nil, false, fmt.Errorf("listing the cluster's topics: %w", err)
	}
	groups, err := r.cfg.Admin.DescribeGroups(ctx, r.cfg.Group)
	if err != nil {
		return nil, false, fmt.Errorf("describing consumer group %s: %w", r.cfg.Group, err)
	}
	if g := groups[r.cfg.Group]; g.State == "PreparingRebalance" || g.State == "CompletingRebalance" {
		return nil, false, nil
	}
	assigned := groups.AssignedPartitions()
	sources, err := r.cfg.Store.ListManifests(ctx)
	if err != nil {
		return nil, false, err
	}
	declared, manifests := map[string]bool{}, 0
	for _, src := range sources {
		if src.Manifest == nil {
			continue
		}
		m, err := manifest.Parse(src.Manifest)
		if err != nil {
			continue // stored only after it parsed; a later binary may read less
		}
		manifests++
		if m.Topic != "" {
			declared[m.Topic] = true
		}
	}

	var out []hub.TopicDrift
	for _, name := range topics.Names() {
		if !r.pattern.MatchString(name) || hub.ExcludedTopic(name) || name == r.cfg.QuarantineTopic {
			continue
		}
		// Without a single manifest nothing is declared: every topic
		// would be undeclared, which tells nothing.
		if manifests > 0 && !declared[name] {
			out = append(out, hub.TopicDrift{Topic: name, Kind: hub.DriftUndeclared})
		}
		if _, ok := assigned[name]; !ok {
			out = append(out, hub.TopicDrift{Topic: name, Kind: hub.DriftUnassigned})
		}
	}
	var missing []string
	for name := range declared {
		if !topics.Has(name) {
			missing = append(missing, name)
		}
	}
	sort.Strings(missing)
	for _, name := range missing {
		out = append(out, hub.TopicDrift{Topic: name, Kind: hub.DriftMissing})
	}
	store.SortDrift(out)
	return out, true, nil
}
