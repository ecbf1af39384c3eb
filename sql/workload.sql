-- Work estimates taken before a heavy step runs (setanon_sql/workload.py). Canonical dialect:
-- PostgreSQL. Logical tables: items(record_id, item_id).

-- name: workload_records_over
-- Records longer than :cap items, and their items.
SELECT count(*), coalesce(sum(len), 0) FROM (
    SELECT record_id, count(*) AS len FROM items GROUP BY record_id HAVING count(*) > :cap
) AS x

-- name: workload_capped_items
-- The rows of t whose record has at most :cap items in ref (longer records are left out whole;
-- ref = t for the data itself, ref = the original items for a published copy of it).
SELECT t.record_id, t.item_id FROM t
WHERE t.record_id NOT IN (SELECT record_id FROM ref GROUP BY record_id HAVING count(*) > :cap)

-- name: workload_numbered_items
-- Each record's items numbered 1..len in item order, with len: an ℓ-subset of a record is then
-- ℓ positions, read by an equi-join instead of ranking all of the record's items.
SELECT record_id, item_id,
       CAST(row_number() OVER (PARTITION BY record_id ORDER BY item_id) AS BIGINT) AS pos,
       CAST(count(*) OVER (PARTITION BY record_id) AS BIGINT) AS len
FROM items

-- name: workload_frequent_combinations
-- Itemsets of size ℓ that level-wise mining forms inside records: only items of support
-- >= :min_count are combined, so a record contributes C(|r ∩ frequent|, ℓ). Returns the sum
-- and the record contributing most (ties: the smallest id) with its frequent-item count.
WITH f AS (
    SELECT item_id FROM items GROUP BY item_id HAVING count(*) >= :min_count
), l AS (
    SELECT i.record_id, count(*) AS len FROM items AS i JOIN f ON f.item_id = i.item_id
    GROUP BY i.record_id
)
SELECT (SELECT sum(km_binomial(len)) FROM l), record_id, len FROM l
ORDER BY len DESC, record_id LIMIT 1
