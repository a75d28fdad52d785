// Package dispatch delivers jobs: a pool of workers claims due jobs under a
// lease, makes exactly one signed attempt per claim, and records results in
// batches; retries follow the back-off curve with full jitter, exhausted
// jobs are dead-lettered, and expired leases are recovered (and poisoned
// past a threshold) by periodic maintenance.
package dispatch
