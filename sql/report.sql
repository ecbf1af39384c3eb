-- Summaries for reports: aggregates only, computed in the DBMS. Canonical dialect: PostgreSQL.

-- name: item_attribute_summary
-- Record-item rows, distinct items, and record lengths (records without items count as 0).
SELECT count(*) AS n_records,
       coalesce(sum(n), 0) AS n_item_rows,
       coalesce(max(n), 0) AS max_length,
       CAST(coalesce(avg(coalesce(n, 0)), 0) AS DOUBLE PRECISION) AS avg_length,
       count(*) FILTER (WHERE n IS NULL) AS n_empty
FROM records AS r
LEFT JOIN (SELECT record_id, count(*) AS n FROM items GROUP BY record_id) AS c
    ON c.record_id = r.record_id

-- name: distinct_items_used
SELECT count(DISTINCT item_id) FROM items

-- name: run_list_of_dataset
SELECT r.run_id, d.name, r.model, r.status, r.seed, r.seconds, r.params, r.verification,
       a.state
FROM runs AS r JOIN datasets AS d ON d.dataset_id = r.dataset_id
LEFT JOIN inplace_applies AS a ON a.run_id = r.run_id
WHERE d.name = :name
ORDER BY r.run_id

-- name: runs_with_status
SELECT run_id FROM runs WHERE status = :status ORDER BY run_id

-- name: run_mark_failed
UPDATE runs SET status = 'failed', message = :message WHERE run_id = :run_id

-- name: run_by_id_any_dataset
SELECT d.name FROM runs AS r JOIN datasets AS d ON d.dataset_id = r.dataset_id
WHERE r.run_id = :run_id
