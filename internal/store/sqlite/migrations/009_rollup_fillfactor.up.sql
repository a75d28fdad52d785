-- PostgreSQL's 009 leaves room on the rollups' pages; SQLite updates rows in
-- place and has no such setting. Kept so both drivers number their steps alike.
SELECT 1;
