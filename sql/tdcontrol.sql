-- TDControl (Cao et al., PVLDB 3(1) 2010), the generalization baseline of Jia et al.: a cut of
-- the hierarchy over the NON-sensitive items, plus global suppression of sensitive items.
-- Canonical dialect: PostgreSQL. Logical tables (km's generalization tables are reused):
--   items(record_id, item_id), dict(item_id, label): the input column;
--   sens(item_id): the sensitive item types;
--   hnode(node_id, label, depth, n_leaves, parent_id), anc(item_id, node_id, depth),
--   occ(item_id, n): km's hierarchy nodes, ancestors-or-self and occurrences (km.sql);
--   nsl(node_id, n): non-sensitive data items below each node (the NCP of the cut);
--   cut(item_id, node_id, leaf_id): item -> its published node (sensitive items: their leaf);
--   g(part, record_id, item_id): the generalized table; a non-sensitive item is published as
--     :offset + node_id so its id never meets a sensitive item's id;
--   supp(item_id): sensitive item types suppressed globally (SuppressControl's greedy is
--     built in setanon_sql/models/rho/tdcgreedy.py: its shapes depend on the qid size).

-- name: tdc_nonsensitive_leaves
-- Non-sensitive data items below each node: the generalization loss of the cut is
-- (n - 1) / (N - 1) per occurrence, N the non-sensitive data items (NCP restricted to them).
SELECT a.node_id, count(*) AS n
FROM anc AS a
WHERE a.item_id NOT IN (SELECT item_id FROM sens)
GROUP BY a.node_id

-- name: tdc_start_cut
-- The most general cut: every non-sensitive item under the root; a sensitive item is never
-- generalized (its own leaf).
SELECT a.item_id,
       CASE WHEN a.item_id IN (SELECT item_id FROM sens) THEN leaf.node_id ELSE a.node_id END
           AS node_id,
       leaf.node_id AS leaf_id
FROM anc AS a
JOIN (SELECT x.item_id, x.node_id
      FROM anc AS x
      JOIN (SELECT item_id, max(depth) AS depth FROM anc GROUP BY item_id) AS d
        ON d.item_id = x.item_id AND d.depth = x.depth) AS leaf
  ON leaf.item_id = a.item_id
WHERE a.depth = 0

-- name: tdc_specialize
-- The cut with node :node_id (at depth :depth) replaced by its children: each item below it
-- moves to its ancestor one level down.
SELECT c.item_id, coalesce(a.node_id, c.node_id) AS node_id, c.leaf_id
FROM cut AS c
LEFT JOIN anc AS a
  ON a.item_id = c.item_id AND c.node_id = :node_id AND a.depth = :depth + 1

-- name: tdc_candidates
-- Nodes of the cut that can be specialized (more than one non-sensitive data item below),
-- with the generalization loss a specialization removes (in occurrences x (N - 1)): the
-- order in which TDControl tries them, largest gain first.
SELECT c.node_id, h.depth,
       sum(o.n * (nv.n - nc.n)) AS gain
FROM cut AS c
JOIN occ AS o ON o.item_id = c.item_id
JOIN hnode AS h ON h.node_id = c.node_id
JOIN nsl AS nv ON nv.node_id = c.node_id
JOIN anc AS a ON a.item_id = c.item_id AND a.depth = h.depth + 1
JOIN nsl AS nc ON nc.node_id = a.node_id
WHERE nv.n > 1 AND c.item_id NOT IN (SELECT item_id FROM sens)
GROUP BY c.node_id, h.depth
ORDER BY gain DESC, c.node_id

-- name: tdc_generalized
-- <cut, D>: each record's items replaced by their cut nodes, duplicates merged (part 0).
SELECT DISTINCT CAST(0 AS BIGINT) AS part, i.record_id,
       CASE WHEN c.node_id = c.leaf_id AND i.item_id IN (SELECT item_id FROM sens)
            THEN i.item_id ELSE :offset + c.node_id END AS item_id
FROM items AS i JOIN cut AS c ON c.item_id = i.item_id

-- name: tdc_loss
-- Information loss of a cut with the sensitive item types in supp suppressed, in integers:
-- sum over non-sensitive occurrences of (n - 1) (divide by N - 1 for NCP), and the
-- occurrences suppressed.
SELECT coalesce(sum(CASE WHEN c.item_id NOT IN (SELECT item_id FROM sens)
                         THEN o.n * (nv.n - 1) ELSE 0 END), 0),
       coalesce(sum(CASE WHEN c.item_id IN (SELECT item_id FROM supp) THEN o.n ELSE 0 END), 0)
FROM cut AS c
JOIN occ AS o ON o.item_id = c.item_id
LEFT JOIN nsl AS nv ON nv.node_id = c.node_id

-- name: tdc_published_cut
-- The cut as published: suppressed item types have no published label.
SELECT item_id, node_id, leaf_id FROM cut WHERE item_id NOT IN (SELECT item_id FROM supp)

-- name: tdc_figures
-- Occurrences, non-sensitive occurrences, generalized occurrences (published above their
-- leaf) and the number of non-sensitive data items N.
SELECT sum(o.n),
       sum(CASE WHEN c.item_id NOT IN (SELECT item_id FROM sens) THEN o.n ELSE 0 END),
       sum(CASE WHEN c.node_id <> c.leaf_id THEN o.n ELSE 0 END),
       (SELECT count(*) FROM occ WHERE item_id NOT IN (SELECT item_id FROM sens))
FROM cut AS c JOIN occ AS o ON o.item_id = c.item_id

-- name: tdc_distribution
-- The symmetric K-L divergence of Jia et al. Sec. 4.1 between the item distribution of the
-- input (p) and that of the published labels (q), matched by label: a generalized label is a
-- new item (p = 0), as Jia et al. count it ("generalization creates a lot of new items").
WITH p AS (
    SELECT d.label, CAST(count(*) AS DOUBLE PRECISION) AS n
    FROM items AS i JOIN dict AS d ON d.item_id = i.item_id GROUP BY d.label
), q AS (
    SELECT d.label, CAST(count(*) AS DOUBLE PRECISION) AS n
    FROM pub AS i JOIN pdict AS d ON d.item_id = i.item_id GROUP BY d.label
), tp AS (SELECT sum(n) AS t FROM p), tq AS (SELECT sum(n) AS t FROM q),
dist AS (
    SELECT coalesce(p.n, 0) / tp.t AS pp, coalesce(q.n, 0) / tq.t AS qq
    FROM p FULL OUTER JOIN q ON q.label = p.label CROSS JOIN tp CROSS JOIN tq
)
SELECT sum(CASE WHEN pp > 0 THEN 0.5 * pp * ln(pp / ((pp + qq) / 2)) ELSE 0 END
           + CASE WHEN qq > 0 THEN 0.5 * qq * ln(qq / ((pp + qq) / 2)) ELSE 0 END)
FROM dist

-- name: tdc_sensitive_published
-- Verify: the published item ids that stand for a sensitive item type (by label).
SELECT DISTINCT pd.item_id
FROM pdict AS pd
JOIN dict AS d ON d.label = pd.label
WHERE d.item_id IN (SELECT item_id FROM sens)

-- name: tdc_bad_mapping
-- Verify: (items suppressed that are not sensitive, sensitive items published under another
-- label, labels shared by a sensitive and another item, non-sensitive items published under
-- a label that is not their own or an ancestor's in the hierarchy).
SELECT
    (SELECT count(*) FROM dict AS d
     WHERE d.item_id NOT IN (SELECT item_id FROM map)
       AND d.item_id NOT IN (SELECT item_id FROM sens)),
    (SELECT count(*) FROM map AS m JOIN dict AS d ON d.item_id = m.item_id
     WHERE m.item_id IN (SELECT item_id FROM sens) AND m.label <> d.label),
    (SELECT count(*) FROM (
        SELECT m.label FROM map AS m GROUP BY m.label
        HAVING count(*) > 1 AND max(CASE WHEN m.item_id IN (SELECT item_id FROM sens)
                                         THEN 1 ELSE 0 END) = 1) AS shared),
    (SELECT count(*) FROM map AS m
     WHERE m.item_id NOT IN (SELECT item_id FROM sens)
       AND NOT EXISTS (SELECT 1 FROM labelanc AS a
                       WHERE a.item_id = m.item_id AND a.node = m.label))
