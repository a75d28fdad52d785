-- Placeholder for version 6, which another branch adds: versions must run
-- 1..N without gaps, and this branch's change is version 8. Drop this file
-- when merging after the branch that owns 006.
SELECT 1;
