package app

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/lerianstudio/streaming-hub/internal/config"
	"github.com/lerianstudio/streaming-hub/internal/kafkasec"
	"github.com/lerianstudio/streaming-hub/internal/reconciler"
)

// newReconciler makes the topic-drift check (RECONCILER_ENABLED), for a
// role that ingests: it has the brokers, the pattern and the group. Every
// such replica tries each check; one at a time runs it.
func (h *Hub) newReconciler() error {
	cfg := &h.Config
	if !cfg.Reconciler.Enabled || !cfg.Role.Ingests() || len(cfg.Ingest.Brokers) == 0 {
		return nil
	}
	kafka := cfg.Kafka
	if h.Broker != nil {
		kafka = config.Defaults(cfg.Mode).Kafka // dev's embedded broker is plaintext
	}
	logger := h.Logger.With("component", "reconciler")
	sec, err := kafkasec.New(kafka, logger)
	if err != nil {
		return fmt.Errorf("reconciler: %w", err)
	}
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(cfg.Ingest.Brokers...)}, sec.Opts()...)...)
	if err != nil {
		return fmt.Errorf("reconciler: %w", err)
	}
	h.reconcilerClient = cl
	h.Reconciler, err = reconciler.New(reconciler.Config{
		Reconciler:      cfg.Reconciler,
		TopicsRegex:     cfg.Ingest.TopicsRegex,
		QuarantineTopic: cfg.Ingest.QuarantineTopic,
		Group:           cfg.Ingest.Group,
		Admin:           kadm.NewClient(cl),
		Store:           h.Store, Metrics: h.Metrics, Logger: logger,
	})
	return err
}
