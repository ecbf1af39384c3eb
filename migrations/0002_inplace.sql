-- In-place application of runs to the user's attached tables (issue 9).
-- One row per run whose output was written into the user's tables; undo flips it to 'undone'.
-- The rows needed to undo live in the run's tables r<run>_undo_items / r<run>_undo_records.

CREATE TABLE inplace_applies (
    run_id INTEGER PRIMARY KEY,
    dataset_id INTEGER NOT NULL,
    items_table TEXT NOT NULL,     -- SCHEMA.TABLE of the user's (record, item) rows
    records_table TEXT,            -- SCHEMA.TABLE of the user's records, if attached with one
    state TEXT NOT NULL,           -- 'applied' | 'undone'
    applied_at TIMESTAMP NOT NULL,
    undone_at TIMESTAMP,
    figures TEXT NOT NULL          -- JSON: rows deleted, updated, inserted per table
);
