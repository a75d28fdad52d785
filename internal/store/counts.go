package store

import hub "github.com/lerianstudio/streaming-hub"

// CountJobsSQL is CountJobs in every driver's dialect: each status is
// counted apart, so each count reads only its own partial index (one query
// over "status IN (...)" matches none of them and reads the whole table,
// history included). It answers pending, in flight and dead-lettered, in
// that order, for JobCounts.
const CountJobsSQL = `SELECT
	(SELECT count(*) FROM delivery_jobs WHERE status = 'pending'),
	(SELECT count(*) FROM delivery_jobs WHERE status = 'in_flight'),
	(SELECT count(*) FROM delivery_jobs WHERE status = 'dead_lettered' AND completed_at IS NOT NULL)`

// JobCounts is CountJobs' answer from CountJobsSQL's columns.
func JobCounts(pending, inFlight, deadLettered int64) map[hub.JobStatus]int64 {
	return map[hub.JobStatus]int64{hub.JobPending: pending, hub.JobInFlight: inFlight, hub.JobDeadLettered: deadLettered}
}
