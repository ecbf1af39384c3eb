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
--   rules(...): unsafe rules of g (qids.unsafe_rules_query); inc(rule_id, lvl, s): the
--     sensitive items s of each unsafe rule's X = q + {e}, lvl = |q|;
--   supp(item_id), picks(item_id): sensitive item types suppressed globally.

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

-- name: tdc_pick
-- One round of SuppressControl's greedy choice at antecedent size :lvl: the sensitive item
-- type that takes part in most unsafe rules of that size per occurrence it costs (global
-- suppression loses all sup(s) occurrences), and every type the one-at-a-time greedy is sure
-- to pick before any type that shares a rule with it. Suppressing s deletes every rule whose
-- X holds s and changes no other support, so a score only falls, and only by the rules a
-- pick of a type sharing a rule with it deletes. Rank the types by their scores now (ties:
-- the smaller item id). Picked together:
-- * the types ranked before every type they share a rule of size :lvl with (each rule's best
--   type is its head; a type heading all its rules): the greedy picks each before all its
--   neighbours, whatever it picks elsewhere, and their rules are disjoint;
-- * the first types a1..aJ of the ranking, as long as each aj, left with the rules it heads
--   (those no better-ranked type deletes), still comes before a(j+1) as a(j+1) scores now
--   (every type after aj scores at most that): the greedy picks a1, ..., aJ first. A type
--   heading all its rules shares no rule with a better-ranked one, so no pick of the ranking
--   changes its score.
-- An earlier version picked only the first types of the ranking that share no rule with a
-- better-ranked one; at the top of a hierarchy nearly every type does, and SuppressControl
-- took about 150 rounds (first 5,000 records of BMS-WebView-2, --m 2; 80 now).
WITH score AS (
    SELECT i.s, count(*) AS nr, min(o.n) AS n
    FROM inc AS i JOIN occ AS o ON o.item_id = i.s
    WHERE i.lvl = :lvl
    GROUP BY i.s
), ranked AS (
    SELECT s, n, CAST(nr AS DOUBLE PRECISION) / n AS score,
           row_number() OVER (ORDER BY CAST(nr AS DOUBLE PRECISION) / n DESC, s) AS rk
    FROM score
), head AS (
    SELECT i.rule_id, min(r.rk) AS rk
    FROM inc AS i JOIN ranked AS r ON r.s = i.s
    WHERE i.lvl = :lvl
    GROUP BY i.rule_id
), own AS (
    SELECT rk, count(*) AS nr FROM head GROUP BY rk
), heads_all AS (
    SELECT i.s, min(h.rk) AS top
    FROM inc AS i JOIN head AS h ON h.rule_id = i.rule_id
    GROUP BY i.s
), fails AS (
    SELECT min(a.rk) AS rk
    FROM ranked AS a
    LEFT JOIN own AS o ON o.rk = a.rk
    LEFT JOIN ranked AS b ON b.rk = a.rk + 1
    WHERE o.nr IS NULL
       OR (b.rk IS NOT NULL
           AND NOT (CAST(o.nr AS DOUBLE PRECISION) / a.n > b.score
                    OR (CAST(o.nr AS DOUBLE PRECISION) / a.n = b.score AND a.s < b.s)))
)
SELECT r.s AS item_id
FROM ranked AS r JOIN heads_all AS t ON t.s = r.s
WHERE t.top = r.rk OR r.rk < coalesce((SELECT rk FROM fails), r.rk + 1)

-- name: tdc_drop_rules
-- The unsafe rules of size :lvl left after suppressing the types in picks (no rule gains
-- confidence). SuppressControl's greedy works on one size at a time, so a round reads and
-- rewrites only that size's rules; the larger ones lose those holding a suppressed type
-- when their size's turn comes.
SELECT i.rule_id, i.lvl, i.s FROM inc AS i
WHERE i.lvl = :lvl
  AND NOT EXISTS (SELECT 1 FROM inc AS j JOIN picks AS p ON p.item_id = j.s
                  WHERE j.rule_id = i.rule_id)

-- name: tdc_rules_left
-- Unsafe rules holding no suppressed type: none once SuppressControl is done.
SELECT count(DISTINCT i.rule_id) FROM inc AS i
WHERE NOT EXISTS (SELECT 1 FROM inc AS j JOIN supp AS p ON p.item_id = j.s
                  WHERE j.rule_id = i.rule_id)

-- name: tdc_union_picks
SELECT item_id FROM supp UNION SELECT item_id FROM picks

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
