package hub

// TopicDrift is one difference between the topics on the Kafka cluster
// that match the hub's ingest pattern, the topics its consumer group is
// assigned and the topics producers' manifests declare
// (docs/operations.md, "Topic drift").
type TopicDrift struct {
	Topic string `json:"topic"`
	Kind  string `json:"kind"` // DriftUndeclared, DriftMissing or DriftUnassigned
}

// The kinds of topic drift.
const (
	// DriftUndeclared: on the cluster, matching the pattern, in no manifest.
	DriftUndeclared = "undeclared"
	// DriftMissing: a manifest declares it; the cluster has no such topic.
	DriftMissing = "missing"
	// DriftUnassigned: on the cluster and matching the pattern, but no
	// member of the hub's consumer group is assigned any of its partitions.
	DriftUnassigned = "unassigned"
)
