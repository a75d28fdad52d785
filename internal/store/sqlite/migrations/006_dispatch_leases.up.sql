-- A claim may lease an ordered subscription's next jobs as a run, to be
-- attempted by one process strictly one at a time. Only the first of a
-- run (or the first still in flight, once those before it are done) can
-- have been under way when its process died: the others were never
-- attempted, so recovering them counts no recovery toward poison and logs
-- no attempt.
ALTER TABLE delivery_jobs ADD COLUMN run_ahead integer NOT NULL DEFAULT 0;
