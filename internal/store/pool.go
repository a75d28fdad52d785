package store

import "time"

// Budget names the part of a process a store call serves. Each part draws
// its database connections from a share of the pool of its own, so a slow
// ingest cannot starve claims and completions, nor the reverse
// (docs/performance.md).
type Budget int

const (
	// BudgetAPI serves the HTTP API, the console and the manifests.
	BudgetAPI Budget = iota
	// BudgetIngest serves the ingest transactions.
	BudgetIngest
	// BudgetDispatch serves claims, completions, leases, maintenance and,
	// in a process that delivers, housekeeping.
	BudgetDispatch
)

// Budgets lists every budget, for what reports on each.
var Budgets = []Budget{BudgetAPI, BudgetIngest, BudgetDispatch}

func (b Budget) String() string {
	switch b {
	case BudgetIngest:
		return "ingest"
	case BudgetDispatch:
		return "dispatch"
	default:
		return "api"
	}
}

// PoolOptions size a driver's connection pool and say which parts of the
// hub the process runs.
type PoolOptions struct {
	// MaxConns is the pool size; a pool_max_conns in a PostgreSQL URL wins.
	// 0 keeps the driver's own default.
	MaxConns int
	// MinConns is how many connections the pool keeps open, idle or not
	// (pgxpool's MinConns; at most MaxConns); MaxConnLifetime closes a
	// connection this long after it opened. 0 keeps the driver's own; a
	// pool_min_conns or pool_max_conn_lifetime in a PostgreSQL URL wins.
	MinConns        int
	MaxConnLifetime time.Duration
	// NoIngest and NoDelivery say which parts do not run here (the role):
	// their budgets are 0 and the rest of the pool is shared by the others.
	NoIngest, NoDelivery bool
	// OnWait, when set, is told how long each call waited for its budget.
	OnWait func(b Budget, waited time.Duration)
}

// Shares is how many connections each budget may hold at once.
type Shares map[Budget]int

// SplitPool divides a pool of n connections (n >= 2). One connection is
// kept for the session locks of the periodic tasks (Retention.Exclusive);
// of the rest the API gets a sixth (at least one), ingest at most half the
// pool, dispatch what remains. A budget of a part the process does not run
// is 0. Below 4 connections in a process that ingests and delivers there
// is too little to divide: the budgets share what there is.
func SplitPool(n int, ingests, delivers bool) Shares {
	usable := max(n-1, 1)
	api := max(1, usable/6)
	switch {
	case ingests && delivers:
		if usable < 3 {
			return Shares{BudgetAPI: usable, BudgetIngest: usable, BudgetDispatch: usable}
		}
		ingest := min(n/2, usable-api-1)
		return Shares{BudgetAPI: api, BudgetIngest: ingest, BudgetDispatch: usable - api - ingest}
	case ingests:
		if usable < 2 {
			return Shares{BudgetAPI: usable, BudgetIngest: usable}
		}
		ingest := min(n/2, usable-1)
		return Shares{BudgetAPI: usable - ingest, BudgetIngest: ingest}
	case delivers:
		if usable < 2 {
			return Shares{BudgetAPI: usable, BudgetDispatch: usable}
		}
		return Shares{BudgetAPI: api, BudgetDispatch: usable - api}
	default:
		return Shares{BudgetAPI: usable}
	}
}

// PoolStats is a snapshot of a driver's connections, for the gauges.
type PoolStats struct {
	Max, Idle, InUse int
	// Budgets are the connections each budget holds now, of its share.
	Budgets map[Budget]BudgetStats
}

// BudgetStats is one budget's share and use.
type BudgetStats struct{ Share, InUse int }

// PoolReporter is implemented by drivers that report their pool.
type PoolReporter interface {
	PoolStats() PoolStats
}
