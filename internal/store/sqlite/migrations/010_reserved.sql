-- Reserved: this number belongs to a change made on another branch at the
-- same time (filters, rate limits, destinations). When that branch is
-- merged its file replaces this one.
SELECT 1;
