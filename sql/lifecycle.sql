-- The life of a run's process (issue 21): who runs it, whether it died, what it left behind.
-- Canonical dialect: PostgreSQL. See setanon_sql/runs.py.

-- name: lifecycle_set_process
-- The process that runs a run, recorded with it so that `setanon runs` can name it and a later
-- process can tell whether it still lives.
UPDATE runs SET pid = :pid, host = :host, heartbeat_at = CURRENT_TIMESTAMP
WHERE run_id = :run_id

-- name: lifecycle_heartbeat
UPDATE runs SET heartbeat_at = CURRENT_TIMESTAMP WHERE run_id = :run_id

-- name: lifecycle_running
SELECT run_id, dataset_id, pid, host FROM runs WHERE status = 'running' ORDER BY run_id

-- name: lifecycle_mark_abandoned
-- Only a run still marked running: a run that finished meanwhile keeps its own status.
UPDATE runs SET status = 'abandoned', finished_at = CURRENT_TIMESTAMP, message = :message
WHERE run_id = :run_id AND status = 'running'

-- name: lifecycle_ended_badly
-- Runs whose tables must be gone: a run that did not finish never keeps any.
SELECT run_id FROM runs WHERE status IN ('failed', 'interrupted', 'abandoned') ORDER BY run_id

-- name: lifecycle_running_of_dataset
SELECT run_id, pid, host FROM runs WHERE dataset_id = :dataset_id AND status = 'running'
ORDER BY run_id DESC

-- name: lifecycle_processes
SELECT run_id, phase, pid, host FROM runs ORDER BY run_id
