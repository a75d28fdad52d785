package store

// FairClaim is what makes a claim fair, the same SQL in every driver. It
// follows a CTE offered(id, tenant_id, event_sequence, run_ahead), each
// deliverable subscription's oldest due jobs up to its free in-flight slots
// (or its run), and defines chosen(id, run_ahead): the batch, taken tenant round by tenant round (every
// tenant's oldest offered job, then every tenant's second, ...), so that
// one tenant's backlog never delays another tenant's next job. limit is the
// batch size's placeholder in the driver's dialect.
func FairClaim(limit string) string {
	return `ranked AS (
	SELECT id, tenant_id, run_ahead, row_number() OVER (PARTITION BY tenant_id ORDER BY event_sequence) AS rn FROM offered
), chosen AS (
	SELECT id, run_ahead FROM ranked ORDER BY rn, tenant_id LIMIT ` + limit + `
)`
}
