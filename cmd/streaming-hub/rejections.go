package main

// rejections.go: `streaming-hub rejections`, the records ingest rejected
// (GET /v1/admin/rejections, admin token).

var rejectionsGroup = group{
	name: "rejections",
	about: "Lists the Kafka records ingest rejected (they broke the contract: a missing or invalid\n" +
		"ce- header, a value over the limit), newest first, through the admin API:\n" +
		"STREAMING_HUB_TOKEN must be the admin token. Their offsets were committed; the hub\n" +
		"keeps the newest 10,000.",
	subs: []subcommand{
		{"list", "[--cursor C] [--limit N] [--all]", "list rejected records, newest first, one page", rejectionsList},
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
