-- Utility metrics of any run (Nakagawa et al. eq. 5, 6, 12). Canonical dialect: PostgreSQL.
-- Logical tables: items(record_id, item_id): the input D; pub(record_id, item_id): the published
-- D' with item ids of the input (labels a run introduced get ids above the input's);
-- pdict(item_id, label): a run's own dictionary; dict(item_id, label): the input's;
-- fa, fb(x1.., size, n): frequent itemsets; ra, rb(a1.., c1..): association rules.

-- name: metrics_util_info
-- eq. 5: share of the input's occurrences that D' no longer has, summed over the input items.
WITH d AS (SELECT item_id, count(*) AS n FROM items GROUP BY item_id),
p AS (SELECT item_id, count(*) AS n FROM pub GROUP BY item_id)
SELECT CAST(sum(d.n - coalesce(p.n, 0)) AS DOUBLE PRECISION) / nullif(sum(d.n), 0)
FROM d LEFT JOIN p ON p.item_id = d.item_id

-- name: metrics_util_dist
-- eq. 6: KL(D' || D) over the input items, D(i) and D'(i) the items' shares of the occurrences
-- (items D' lost contribute 0: lim x log x = 0).
WITH d AS (SELECT item_id, CAST(count(*) AS DOUBLE PRECISION) AS n FROM items GROUP BY item_id),
p AS (SELECT item_id, CAST(count(*) AS DOUBLE PRECISION) AS n FROM pub
      WHERE item_id IN (SELECT item_id FROM d) GROUP BY item_id),
td AS (SELECT sum(n) AS t FROM d), tp AS (SELECT sum(n) AS t FROM p)
SELECT coalesce(sum((p.n / tp.t) * ln((p.n / tp.t) / (d.n / td.t))), 0)
FROM p JOIN d ON d.item_id = p.item_id CROSS JOIN td CROSS JOIN tp

-- name: metrics_pub_by_label
-- A run's published items in the input's ids: the same label is the same item; a new label
-- (a generalized one) gets an id above every input id.
WITH top AS (SELECT coalesce(max(item_id), 0) AS m FROM dict)
SELECT p.record_id, coalesce(d.item_id, top.m + n.item_id) AS item_id
FROM pub AS p
JOIN pdict AS n ON n.item_id = p.item_id
LEFT JOIN dict AS d ON d.label = n.label
CROSS JOIN top

-- name: metrics_count_records
SELECT count(*) FROM records

-- name: metrics_count_rows
SELECT count(*) FROM t
