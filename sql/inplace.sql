-- In-place application of a run to the user's attached tables, its change log and undo.
-- Canonical dialect: PostgreSQL. Statements that name the user's columns are sqlglot
-- expressions (setanon_sql/inplace/); these work on setanon's own tables only.

-- name: inplace_running_runs
SELECT run_id, dataset_id FROM runs WHERE status = 'running' ORDER BY run_id

-- name: inplace_keymap
-- The user's record key as text (attach keeps it as attribute 1, column c1).
SELECT record_id, CAST(c1 AS TEXT) AS key_text FROM records

-- name: inplace_pair_plan
-- One row per original (record, item) pair that changes, plus published pairs no original pair
-- becomes. An original pair becomes (record, map label): kept when that pair is published,
-- else it moved (matched by rank, per label, with a published pair no original pair became) or
-- was suppressed; records absent from the published records are deleted. NOT EXISTS, never
-- NOT IN: PostgreSQL cannot make NOT IN an anti-join and, once the subquery outgrows work_mem,
-- rescans it per row (1M records: over 20 minutes).
WITH orig AS (
    SELECT i.record_id, i.item_id, d.label AS old_label, m.label AS new_label
    FROM items AS i
    JOIN dict AS d ON d.item_id = i.item_id
    JOIN map AS m ON m.item_id = i.item_id
), pub AS (
    SELECT DISTINCT p.record_id, d.label
    FROM pitems AS p JOIN pdict AS d ON d.item_id = p.item_id
), live AS (
    SELECT record_id FROM precords
), kept AS (
    SELECT o.record_id, o.item_id, o.old_label, o.new_label
    FROM orig AS o JOIN pub AS p ON p.record_id = o.record_id AND p.label = o.new_label
), removed AS (
    SELECT o.record_id, o.item_id, o.old_label, o.new_label,
           row_number() OVER (PARTITION BY o.new_label ORDER BY o.record_id, o.item_id) AS rnk
    FROM orig AS o
    WHERE o.record_id IN (SELECT record_id FROM live)
      AND NOT EXISTS (SELECT 1 FROM pub AS p
                      WHERE p.record_id = o.record_id AND p.label = o.new_label)
), added AS (
    SELECT p.record_id, p.label,
           row_number() OVER (PARTITION BY p.label ORDER BY p.record_id) AS rnk
    FROM pub AS p
    WHERE NOT EXISTS (SELECT 1 FROM orig AS o
                      WHERE o.record_id = p.record_id AND o.new_label = p.label)
)
SELECT record_id, item_id, old_label, record_id AS new_record_id, new_label,
       'generalize' AS action
FROM kept WHERE new_label <> old_label
UNION ALL
SELECT r.record_id, r.item_id, r.old_label, a.record_id, r.new_label,
       CASE WHEN a.record_id IS NULL THEN 'suppress' ELSE 'move' END
FROM removed AS r LEFT JOIN added AS a ON a.label = r.new_label AND a.rnk = r.rnk
UNION ALL
SELECT a.record_id, NULL, NULL, a.record_id, a.label, 'insert'
FROM added AS a
WHERE NOT EXISTS (SELECT 1 FROM removed AS r WHERE r.new_label = a.label AND r.rnk = a.rnk)
UNION ALL
SELECT o.record_id, o.item_id, o.old_label, NULL, NULL, 'delete_record'
FROM orig AS o
WHERE NOT EXISTS (SELECT 1 FROM live AS l WHERE l.record_id = o.record_id)

-- name: inplace_user_pairs
-- The pair plan keyed by the user's record keys (text), the form the user's rows are matched in.
SELECT p.record_id, p.item_id, p.action, k.key_text, p.old_label, n.key_text AS new_key,
       p.new_label
FROM plan AS p
LEFT JOIN keymap AS k ON k.record_id = p.record_id
LEFT JOIN keymap AS n ON n.record_id = p.new_record_id

-- name: inplace_deleted_records
SELECT r.record_id, k.key_text
FROM records AS r JOIN keymap AS k ON k.record_id = r.record_id
WHERE NOT EXISTS (SELECT 1 FROM precords AS p WHERE p.record_id = r.record_id)

-- name: inplace_plan_counts
SELECT action, count(*) FROM plan GROUP BY action ORDER BY action

-- name: inplace_plan_top_changes
WITH shown AS (
    SELECT action, old_label,
           CASE WHEN action IN ('suppress', 'delete_record') THEN NULL ELSE new_label END AS label
    FROM plan
)
SELECT action, old_label, label, count(*) AS n
FROM shown
GROUP BY action, old_label, label
ORDER BY n DESC, action, old_label, label
LIMIT :n

-- name: inplace_plan_sample
SELECT action, key_text, old_label, new_key,
       CASE WHEN action IN ('suppress', 'delete_record') THEN NULL ELSE new_label END
FROM plan
ORDER BY action, record_id, old_label
LIMIT :n

-- name: inplace_log_items
INSERT INTO change_log (run_id, record_id, attr_no, item_id, action, old_value, new_value)
SELECT :run_id, record_id, :attr_no, item_id,
       CASE action WHEN 'move' THEN 'move_out' WHEN 'insert' THEN 'move_in' ELSE action END,
       CASE WHEN action IN ('move', 'insert') THEN key_text ELSE old_label END,
       CASE WHEN action IN ('move', 'insert') THEN new_key ELSE new_label END
FROM plan

-- name: inplace_log_records
INSERT INTO change_log (run_id, record_id, attr_no, item_id, action, old_value, new_value)
SELECT :run_id, record_id, attr_no, NULL, action, old_value, new_value FROM recplan

-- name: inplace_insert
INSERT INTO inplace_applies (run_id, dataset_id, items_table, records_table, state, applied_at,
                             figures)
VALUES (:run_id, :dataset_id, :items_table, :records_table, 'applied', CURRENT_TIMESTAMP,
        :figures)

-- name: inplace_by_run
SELECT run_id, dataset_id, items_table, records_table, state, figures
FROM inplace_applies WHERE run_id = :run_id

-- name: inplace_applied_of_dataset
SELECT run_id FROM inplace_applies WHERE dataset_id = :dataset_id AND state = 'applied'

-- name: inplace_mark_undone
UPDATE inplace_applies SET state = 'undone', undone_at = CURRENT_TIMESTAMP
WHERE run_id = :run_id

-- name: inplace_count
SELECT count(*) FROM t

-- name: inplace_applied_runs
SELECT run_id FROM inplace_applies WHERE state = 'applied' ORDER BY run_id

-- name: inplace_delete
DELETE FROM inplace_applies WHERE run_id = :run_id
