-- Catalog statements: datasets, attributes, hierarchies, runs.
-- Canonical dialect: PostgreSQL. Logical tables are bound to the setanon schema at render time.

-- name: schema_version_create
CREATE TABLE IF NOT EXISTS schema_version (
    version INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    applied_at TIMESTAMP NOT NULL
)

-- name: schema_version_list
SELECT version, name FROM schema_version ORDER BY version

-- name: schema_version_insert
INSERT INTO schema_version (version, name, applied_at) VALUES (:version, :name, CURRENT_TIMESTAMP)

-- name: table_exists
SELECT count(*) FROM information_schema.tables
WHERE table_schema = :schema_name AND table_name = :table_name

-- name: table_columns
SELECT column_name FROM information_schema.columns
WHERE table_schema = :schema_name AND table_name = :table_name
ORDER BY ordinal_position

-- name: dataset_next_id
SELECT coalesce(max(dataset_id), 0) + 1 FROM datasets

-- name: dataset_insert
INSERT INTO datasets (dataset_id, name, kind, source, n_records, options, created_at)
VALUES (:dataset_id, :name, :kind, :source, :n_records, :options, CURRENT_TIMESTAMP)

-- name: dataset_by_name
SELECT dataset_id, name, kind, source, n_records, options FROM datasets WHERE name = :name

-- name: dataset_list
SELECT dataset_id, name, kind, source, n_records FROM datasets ORDER BY dataset_id

-- name: attribute_insert
INSERT INTO attributes (dataset_id, attr_no, name, role, value_type, n_distinct)
VALUES (:dataset_id, :attr_no, :name, :role, :value_type, :n_distinct)

-- name: attributes_of_dataset
SELECT attr_no, name, role, value_type, n_distinct FROM attributes
WHERE dataset_id = :dataset_id ORDER BY attr_no

-- name: hierarchy_next_id
SELECT coalesce(max(hierarchy_id), 0) + 1 FROM hierarchies

-- name: hierarchy_by_name
SELECT hierarchy_id, name, dataset_id, attr_no, source, n_leaves, height
FROM hierarchies WHERE name = :name

-- name: hierarchy_insert
INSERT INTO hierarchies (hierarchy_id, name, dataset_id, attr_no, source, n_leaves, height,
                         created_at)
VALUES (:hierarchy_id, :name, :dataset_id, :attr_no, :source, :n_leaves, :height,
        CURRENT_TIMESTAMP)

-- name: hierarchy_delete
DELETE FROM hierarchies WHERE hierarchy_id = :hierarchy_id

-- name: hierarchy_nodes_delete
DELETE FROM hierarchy_nodes WHERE hierarchy_id = :hierarchy_id

-- name: hierarchies_of_dataset
SELECT hierarchy_id FROM hierarchies WHERE dataset_id = :dataset_id

-- name: run_next_id
SELECT coalesce(max(run_id), 0) + 1 FROM runs

-- name: run_insert
INSERT INTO runs (run_id, dataset_id, model, params, seed, backend, status, package_version,
                  started_at)
VALUES (:run_id, :dataset_id, :model, :params, :seed, :backend, 'running', :package_version,
        CURRENT_TIMESTAMP)

-- name: run_set_phase
UPDATE runs SET phase = :phase WHERE run_id = :run_id

-- name: run_finish
UPDATE runs SET status = :status, finished_at = CURRENT_TIMESTAMP, seconds = :seconds,
       figures = :figures, message = :message
WHERE run_id = :run_id

-- name: run_set_verification
UPDATE runs SET verification = :verification, verification_detail = :detail
WHERE run_id = :run_id

-- name: run_by_id
SELECT run_id, dataset_id, model, params, seed, backend, status, package_version, seconds,
       figures, message, phase, verification, verification_detail
FROM runs WHERE run_id = :run_id

-- name: run_latest_of_dataset
SELECT max(run_id) FROM runs WHERE dataset_id = :dataset_id

-- name: run_list
-- Every run with its verification and whether it is applied in place (state of the apply).
SELECT r.run_id, d.name, r.model, r.status, r.seed, r.seconds, r.params, r.verification,
       a.state
FROM runs AS r JOIN datasets AS d ON d.dataset_id = r.dataset_id
LEFT JOIN inplace_applies AS a ON a.run_id = r.run_id
ORDER BY r.run_id

-- name: tables_with_prefix
SELECT table_name FROM information_schema.tables WHERE table_schema = :schema_name

-- name: dataset_delete
DELETE FROM datasets WHERE dataset_id = :dataset_id

-- name: attributes_delete
DELETE FROM attributes WHERE dataset_id = :dataset_id

-- name: runs_of_dataset
SELECT run_id FROM runs WHERE dataset_id = :dataset_id ORDER BY run_id

-- name: runs_delete
DELETE FROM runs WHERE dataset_id = :dataset_id

-- name: change_log_delete
DELETE FROM change_log WHERE run_id = :run_id

-- name: table_column_types
SELECT column_name, data_type FROM information_schema.columns
WHERE table_schema = :schema_name AND table_name = :table_name
ORDER BY ordinal_position

-- name: current_schema_name
SELECT current_schema()
