package main

// rejections.go: `streaming-hub rejections`, the records ingest rejected
// (GET /v1/admin/rejections, admin token), and their replay from the
// source (POST /v1/admin/rejections/{id}/replay).

import (
	"fmt"
	"io"
)

var rejectionsGroup = group{
	name: "rejections",
	about: "Lists the Kafka records ingest rejected (they broke the contract: a missing or invalid\n" +
		"ce- header, a value over the limit), newest first, through the admin API:\n" +
		"STREAMING_HUB_TOKEN must be the admin token. Their offsets were committed; the hub\n" +
		"keeps the newest 10,000. A rejected record is read again from Kafka and ingested\n" +
		"as if new with replay, once what refused it was fixed.",
	subs: []subcommand{
		{"list", "[--cursor C] [--limit N] [--all]", "list rejected records, newest first, one page", rejectionsList},
		{"replay", "<id>", "read a rejected record again at its source and ingest it as if new", rejectionsReplay},
	},
}

func runRejections(args []string, e env) int { return rejectionsGroup.run(args, e) }

type rejectionView struct {
	ID         int64             `json:"id"`
	Topic      string            `json:"topic"`
	Partition  int32             `json:"partition"`
	Offset     int64             `json:"offset"`
	CEID       string            `json:"ce_id"`
	Headers    map[string]string `json:"headers"`
	Reason     string            `json:"reason"`
	RejectedAt string            `json:"rejected_at"`
}

func rejectionsList(args []string, e env) int {
	c := newAPICmd(e, "rejections list", "[--cursor C] [--limit N] [flags]",
		"Lists rejected records, newest first, one page: where each was (topic, partition,\n"+
			"offset), its ce-id and why it was rejected. -o json or -o yaml shows their headers\n"+
			"too. When there are more, the last line on stderr says which --cursor to pass next.\n"+
			"Needs the admin token.", false)
	p := c.pageFlags()
	if code, ok := c.parse(args); !ok {
		return code
	}
	return listCmd(c, "/v1/admin/rejections", p, nil,
		[]string{"ID", "TOPIC", "PARTITION", "OFFSET", "CE_ID", "REASON", "REJECTED"},
		func(r rejectionView) []string {
			return []string{itoa(r.ID), r.Topic, itoa(int64(r.Partition)), itoa(r.Offset), r.CEID, truncate(r.Reason, 80), r.RejectedAt}
		})
}

// replayView is POST /v1/admin/rejections/{id}/replay's answer.
type replayView struct {
	RejectionID int64   `json:"rejection_id"`
	Topic       string  `json:"topic"`
	Partition   int32   `json:"partition"`
	Offset      int64   `json:"offset"`
	Verdict     string  `json:"verdict"`
	Reason      *string `json:"reason"`
	TenantID    *string `json:"tenant_id"`
	Sequence    *int64  `json:"sequence"`
	Quarantined bool    `json:"quarantined"`
}

func rejectionsReplay(args []string, e env) int {
	c := newAPICmd(e, "rejections replay", "<id> [flags]",
		`Reads the rejected record <id> (from rejections list) again from Kafka, at its
topic, partition and offset, and ingests it as if new: after the producer's key, the
tenant or the manifest was fixed it is accepted (tenant and sequence shown); still
refused, it is refused again (a new rejection, quarantined a second time). A record
Kafka no longer retains fails with record_not_retained (410). Needs the admin token
and a hub whose role reads Kafka (all or ingest).`, false, "<id>")
	if code, ok := c.parse(args); !ok {
		return code
	}
	var r replayView
	return c.do("POST", "/v1/admin/rejections/"+pathEscape(c.args[0])+"/replay", nil, []byte("{}"), &r, func(w io.Writer) {
		fields(w,
			"rejection_id", itoa(r.RejectionID),
			"source", fmt.Sprintf("%s/%d@%d", r.Topic, r.Partition, r.Offset),
			"verdict", r.Verdict,
			"reason", str(r.Reason),
			"tenant_id", str(r.TenantID),
			"sequence", seq(r.Sequence),
			"quarantined", fmt.Sprint(r.Quarantined),
		)
	})
}

// seq shows an optional sequence ("" when absent).
func seq(n *int64) string {
	if n == nil {
		return ""
	}
	return itoa(*n)
}
