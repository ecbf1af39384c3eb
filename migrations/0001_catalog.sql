-- setanon's catalog: datasets, their attributes, hierarchies, runs and the change log.
-- Canonical dialect (PostgreSQL); unqualified tables are created in the setanon schema.
-- Per-dataset data tables (records, record-item tables, item dictionaries) are created by the
-- loaders under names from setanon_sql.names; this catalog points at them by dataset_id.

CREATE TABLE datasets (
    dataset_id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    kind TEXT NOT NULL,            -- 'transactions' | 'table' | 'attached'
    source TEXT,                   -- file path or SCHEMA.TABLE it came from
    n_records BIGINT NOT NULL,
    options TEXT NOT NULL,         -- JSON: load options (format, separators, attached columns)
    created_at TIMESTAMP NOT NULL
);

CREATE TABLE attributes (
    dataset_id INTEGER NOT NULL,
    attr_no INTEGER NOT NULL,      -- position of the column in the input (1-based)
    name TEXT NOT NULL,            -- column name as in the input
    role TEXT NOT NULL,            -- 'id' | 'qi' | 'set' | 'other'
    value_type TEXT NOT NULL,      -- 'integer' | 'text' (single-valued), 'items' (set-valued)
    n_distinct BIGINT NOT NULL,
    PRIMARY KEY (dataset_id, attr_no)
);

CREATE TABLE hierarchies (
    hierarchy_id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,     -- '<dataset>:<column>'
    dataset_id INTEGER NOT NULL,
    attr_no INTEGER NOT NULL,      -- the attribute whose values are the leaves
    source TEXT,
    n_leaves BIGINT NOT NULL,
    height INTEGER NOT NULL,       -- depth of the deepest leaf (the root has depth 0)
    created_at TIMESTAMP NOT NULL
);

CREATE TABLE hierarchy_nodes (
    hierarchy_id INTEGER NOT NULL,
    node TEXT NOT NULL,            -- label of the node (a leaf is an item or value label)
    parent TEXT,                   -- NULL only for the root
    depth INTEGER NOT NULL,        -- 0 for the root, increasing towards the leaves
    n_leaves BIGINT NOT NULL,      -- leaves below the node (1 for a leaf): the basis of NCP
    PRIMARY KEY (hierarchy_id, node)
);

CREATE TABLE runs (
    run_id INTEGER PRIMARY KEY,
    dataset_id INTEGER NOT NULL,
    model TEXT NOT NULL,
    params TEXT NOT NULL,          -- JSON
    seed BIGINT,
    backend TEXT NOT NULL,
    status TEXT NOT NULL,          -- 'running' | 'done' | 'failed'
    package_version TEXT NOT NULL,
    started_at TIMESTAMP NOT NULL,
    finished_at TIMESTAMP,
    seconds DOUBLE PRECISION,
    figures TEXT,                  -- JSON: utility and privacy figures of the run
    message TEXT
);

CREATE TABLE change_log (
    run_id INTEGER NOT NULL,
    record_id BIGINT NOT NULL,
    attr_no INTEGER NOT NULL,
    item_id INTEGER,               -- the original item (set-valued attributes)
    action TEXT NOT NULL,          -- 'suppress' | 'generalize' | 'move_out' | 'move_in' | 'delete_record'
    old_value TEXT,
    new_value TEXT
);
