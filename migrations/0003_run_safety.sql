-- Fail closed (issue 21): what a run's output may be used for, and whether its process lives.
-- phase: where a running run is ('search' | 'publish' | 'verify' | 'apply'), kept after it ends.
-- verification: 'passed' | 'failed' | 'inconclusive', NULL while not verified. Only a 'done' run
--   whose verification is 'passed' may be exported, applied in place or shown as published.
-- verification_detail: JSON of the last verification (which check, its bound, its figures).
-- pid, host: the process that runs it; heartbeat_at: refreshed while it works, so a run whose
--   process died is seen as abandoned (see setanon_sql/runs.py).

ALTER TABLE runs ADD COLUMN phase TEXT;
ALTER TABLE runs ADD COLUMN verification TEXT;
ALTER TABLE runs ADD COLUMN verification_detail TEXT;
ALTER TABLE runs ADD COLUMN pid INTEGER;
ALTER TABLE runs ADD COLUMN host TEXT;
ALTER TABLE runs ADD COLUMN heartbeat_at TIMESTAMP;
