-- Work estimates taken before a heavy step runs (setanon_sql/workload.py). Canonical dialect:
-- PostgreSQL. Logical tables: items(record_id, item_id).

-- name: workload_longest_record
-- The longest record (ties: the smallest id) and its number of items.
SELECT record_id, count(*) AS len FROM items
GROUP BY record_id ORDER BY count(*) DESC, record_id LIMIT 1

-- name: workload_weighted_length
-- For itemsets of size :ell: Z = sum of C(|r|, ℓ) over records, and sum of C(|r|, ℓ) * |r|.
-- Their ratio is the items a proposal of the itemset sampler reads on average (a record is
-- proposed with weight C(|r|, ℓ) and all its items are ranked). km_binomial is a float
-- product, so 1e5-item records do not overflow.
WITH w AS (SELECT record_id, count(*) AS len FROM items GROUP BY record_id HAVING count(*) >= :ell)
SELECT sum(km_binomial(len)), sum(km_binomial(len) * len) FROM w

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
