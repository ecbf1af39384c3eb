-- Loading: from staged lines or cells to normalized records, item dictionaries and record-item
-- rows. Canonical dialect: PostgreSQL. Logical tables: lines(pos, line), tokens(record_id, label),
-- dict(item_id, label), items(record_id, item_id), records(record_id, position, ...).

-- name: tokens_from_blank_separated
-- One row per distinct (record, item), with how often the line named it (n > 1: a duplicate,
-- counted by duplicate_tokens): items are separated by runs of blanks or tabs; in SPMF files
-- the itemset separator -1 and the line end -2 are not items.
CREATE TABLE tokens AS
SELECT pos AS record_id, tok AS label, count(*) AS n
FROM (SELECT pos, unnest(regexp_split_to_array(line, '[ \t]+')) AS tok FROM lines) AS t
WHERE tok <> '' AND NOT (:spmf AND tok IN ('-1', '-2'))
GROUP BY pos, tok

-- name: tokens_from_separated
-- One row per distinct (record, item) of a cell split at an exact separator string, with how
-- often the cell named it.
CREATE TABLE tokens AS
SELECT pos AS record_id, tok AS label, count(*) AS n
FROM (SELECT pos, unnest(string_to_array(line, :separator)) AS tok FROM lines) AS t
WHERE tok <> ''
GROUP BY pos, tok

-- name: duplicate_tokens
-- Items a record named more than once: a record is a set, so each counts once; reported.
SELECT coalesce(sum(n - 1), 0) FROM tokens

-- name: first_non_integer_token
SELECT record_id, label FROM tokens
WHERE NOT label ~ '^-?[0-9]+$'
ORDER BY record_id, label
LIMIT 1

-- name: first_bad_spmf_line
SELECT pos FROM lines
WHERE line IS NOT NULL AND trim(line) <> '' AND NOT line ~ '(^|[ \t])-2[ \t]*$'
ORDER BY pos
LIMIT 1

-- name: labels_are_integers
-- True when every label is a canonical integer (no leading zeros, sign only for negatives):
-- such dictionaries are ordered by value, so exports list items as FIMI files do.
SELECT coalesce(bool_and(label ~ '^-?(0|[1-9][0-9]{0,36})$'), FALSE)
FROM (SELECT DISTINCT label FROM tokens) AS t

-- name: items_from_tokens
-- Record-item rows clustered by item: postings of an item are contiguous.
CREATE TABLE items AS
SELECT t.record_id, d.item_id
FROM tokens AS t JOIN dict AS d ON d.label = t.label
ORDER BY d.item_id, t.record_id

-- name: count_rows
SELECT count(*) FROM t

-- name: records_from_lines
CREATE TABLE records AS
SELECT pos AS record_id, pos AS position FROM lines ORDER BY pos

-- name: first_empty_value
SELECT pos FROM lines WHERE line IS NULL OR trim(line) = '' ORDER BY pos LIMIT 1

-- name: first_duplicate_value
SELECT line, min(pos), max(pos), count(*) FROM lines
GROUP BY line HAVING count(*) > 1
ORDER BY min(pos)
LIMIT 1

-- name: column_is_integer
SELECT coalesce(bool_and(line ~ '^-?(0|[1-9][0-9]{0,17})$'), FALSE) FROM lines
WHERE line IS NOT NULL

-- name: count_distinct_values
SELECT count(DISTINCT line) FROM lines

