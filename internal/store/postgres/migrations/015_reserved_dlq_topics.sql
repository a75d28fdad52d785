-- Reserved for the producer DLQ topics change (SPEC 27), made on another
-- branch. This placeholder only keeps versions 1..N without a gap on the
-- idempotency branch: when both branches are merged, that branch's 015
-- replaces this file (delete this one).
SELECT 1;
