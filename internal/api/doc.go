// Package api is the hub's HTTP surface: health, readiness and metrics for
// operators, and the JSON /v1 API. Handlers return errors; one table maps
// error codes to statuses.
package api
