-- Aggregates behind the plots of `setanon report`: computed in the DBMS, read back small.
-- Canonical dialect: PostgreSQL. `items`/`records`/`dict` are one version of a dataset (as
-- loaded, or as published by a run: see setanon_sql/io/published.py); items of records a run
-- deleted are not counted, so every statement first keeps the items of published records.

-- name: report_item_support_curve
-- Rank-frequency curve (support of the r-th most frequent item), thinned in SQL: the first and
-- the last point of every bucket of equal width in ln(rank), about 20 buckets per factor e, so a
-- curve over 16,000 items comes back as a few hundred rows. Ties are broken by item id.
WITH kept AS (
    SELECT i.item_id FROM items AS i JOIN records AS r ON r.record_id = i.record_id
), support AS (
    SELECT item_id, count(*) AS n FROM kept GROUP BY item_id
), ranked AS (
    SELECT row_number() OVER (ORDER BY n DESC, item_id) AS item_rank, n FROM support
)
SELECT min(item_rank) AS first_rank, max(n) AS first_support,
       max(item_rank) AS last_rank, min(n) AS last_support
FROM ranked
GROUP BY floor(ln(item_rank) * 20)
ORDER BY first_rank

-- name: report_record_lengths
-- Records by number of items (0 for a record without items).
SELECT coalesce(c.n, 0) AS record_length, count(*) AS n_records
FROM records AS r
LEFT JOIN (SELECT record_id, count(*) AS n FROM items GROUP BY record_id) AS c
    ON c.record_id = r.record_id
GROUP BY coalesce(c.n, 0)
ORDER BY record_length

-- name: report_unicity
-- Exact unicity for itemset sizes 1 and 2: distinct itemsets, those of support 1, and the
-- records holding at least one itemset of support 1 (the one record of such an itemset is its
-- min(record_id)). Pairs are the items of a record joined with themselves, item_id a < b; with
-- with_pairs = 0 the pairs are skipped (a constant false filter: neither engine runs the join).
WITH kept AS (
    SELECT i.record_id, i.item_id FROM items AS i JOIN records AS r ON r.record_id = i.record_id
), singles AS (
    SELECT item_id, count(*) AS n, min(record_id) AS only_record FROM kept GROUP BY item_id
), pairs AS (
    SELECT a.item_id AS x, b.item_id AS y, count(*) AS n, min(a.record_id) AS only_record
    FROM kept AS a JOIN kept AS b ON b.record_id = a.record_id AND a.item_id < b.item_id
    WHERE :with_pairs = 1
    GROUP BY a.item_id, b.item_id
)
SELECT 1 AS ell, count(*) AS itemsets, count(*) FILTER (WHERE n = 1) AS unique_itemsets,
       count(DISTINCT only_record) FILTER (WHERE n = 1) AS records_at_risk
FROM singles
UNION ALL
SELECT 2 AS ell, count(*) AS itemsets, count(*) FILTER (WHERE n = 1) AS unique_itemsets,
       count(DISTINCT only_record) FILTER (WHERE n = 1) AS records_at_risk
FROM pairs
ORDER BY ell

-- name: report_item_changes
-- Per label: occurrences before, kept as they were (same record, same label), removed (no longer
-- in that record under that label: suppressed, generalized or swapped away) and added (in a
-- record that did not have it: a generalized label or a swapped-in item). The N labels with the
-- most removed + added (N bound as top), each row carrying the totals over all labels too.
WITH before AS (
    SELECT i.record_id, d.label FROM items AS i JOIN dict AS d ON d.item_id = i.item_id
), after AS (
    SELECT i.record_id, d.label
    FROM pub_items AS i
    JOIN pub_records AS r ON r.record_id = i.record_id
    JOIN pub_dict AS d ON d.item_id = i.item_id
), joined AS (
    SELECT coalesce(b.label, a.label) AS label,
           CASE WHEN b.record_id IS NULL THEN 0 ELSE 1 END AS had,
           CASE WHEN a.record_id IS NULL THEN 0 ELSE 1 END AS has
    FROM before AS b
    FULL OUTER JOIN after AS a ON a.record_id = b.record_id AND a.label = b.label
), per_label AS (
    SELECT label, sum(had) AS n_before, sum(had * has) AS n_kept,
           sum(had) - sum(had * has) AS n_removed, sum(has) - sum(had * has) AS n_added
    FROM joined
    GROUP BY label
), totals AS (
    SELECT label, n_before, n_kept, n_removed, n_added,
           sum(n_before) OVER () AS all_before, sum(n_kept) OVER () AS all_kept,
           sum(n_removed) OVER () AS all_removed, sum(n_added) OVER () AS all_added,
           count(*) FILTER (WHERE n_removed > 0) OVER () AS labels_removed,
           count(*) FILTER (WHERE n_added > 0) OVER () AS labels_added
    FROM per_label
)
SELECT label, n_before, n_kept, n_removed, n_added, all_before, all_kept, all_removed,
       all_added, labels_removed, labels_added
FROM totals
ORDER BY n_removed + n_added DESC, label
LIMIT :top

-- name: report_class_sizes
-- Equivalence classes a run published as classes(class_id, size): classes by size.
SELECT CAST(size AS BIGINT) AS class_size, count(*) AS n_classes
FROM classes
GROUP BY CAST(size AS BIGINT)
ORDER BY class_size
