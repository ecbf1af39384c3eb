-- k-anonymity of complex data by top-down specialization (NEC: Takahashi et al., "Efficient
-- set-value recoding for anonymizing complex data"). Canonical dialect: PostgreSQL.
-- Logical tables (bound per call):
--   state(record_id, cls)        the class of every live (not deleted) record
--   cs(cls, n)                   class sizes
--   val(record_id, v)            one single-valued QI: the value (numeric) or leaf code
--   bounds(cls, lo, hi)          numeric QI: the class's interval (tight: actual min and max)
--   gen(cls, node)               categorical QI: the class's hierarchy node
--   nodes(node, label, depth, n_leaves), anc(leaf, node, depth): a categorical QI's hierarchy
--   items(record_id, item_id)    one set-valued QI as loaded
--   disc(cls, item_id)           items disclosed in a class (shared by all its records)
--   moves(cls, new_cls, ...)     the classes one specialization step creates (lineage)
-- New class ids are :next_cls + row_number(), so ids stay unique without a global renumbering.

-- name: kanon_class_sizes
SELECT cls, count(*) AS n FROM state GROUP BY cls

-- name: kanon_changed
-- The classes a step changed: the ones that split (they keep their pool, or vanish) and the new.
SELECT cls FROM moves UNION SELECT new_cls FROM moves

-- name: kanon_class_sizes_update
-- Sizes recounted for the changed classes only; the others keep theirs.
SELECT c.cls, c.n FROM cs AS c
WHERE NOT EXISTS (SELECT 1 FROM changed AS x WHERE x.cls = c.cls)
UNION ALL
SELECT s.cls, count(*) AS n FROM state AS s JOIN changed AS x ON x.cls = s.cls GROUP BY s.cls

-- name: kanon_fresh_next
-- fresh(qi, cls): the classes the next step of a QI must look at. A class that a step of the QI
-- left unsplit gives the same answer until another QI's step changes it (for a set-valued QI
-- also under a smaller budget: a pool refused once never fits again). So the chosen QI's list
-- becomes the classes its step changed, and every other QI (qis: those still active) gains them.
SELECT f.qi, f.cls FROM fresh AS f WHERE f.qi <> :chosen AND f.qi IN (SELECT qi FROM qis)
UNION
SELECT q.qi, c.cls FROM qis AS q CROSS JOIN changed AS c

-- name: kanon_fresh_records
SELECT coalesce(sum(c.n), 0) FROM cs AS c JOIN fresh AS f ON f.cls = c.cls WHERE f.qi = :qi

-- name: kanon_fresh_state
-- The records of a QI's fresh classes: what its step ranks, counts and splits.
SELECT s.record_id, s.cls FROM state AS s JOIN fresh AS f ON f.cls = s.cls WHERE f.qi = :qi

-- name: kanon_count
SELECT count(*) FROM t

-- name: kanon_occurrences
-- Item occurrences of the live records (the denominator of a set-valued attribute's NCP).
SELECT count(*) FROM items AS i JOIN state AS s ON s.record_id = i.record_id

-- name: kanon_occurrences_of
SELECT count(*) FROM items AS i JOIN gone AS g ON g.record_id = i.record_id

-- name: kanon_numeric_moves
-- Split every class's interval in two at the value that balances the halves best, among the
-- values that leave >= k records on both sides (Alg. 1 l.5 for a numeric QI, with the l.6-7
-- check per class: a class without such a value keeps its interval).
WITH v AS (
    SELECT s.cls, x.v, count(*) AS m
    FROM state AS s JOIN val AS x ON x.record_id = s.record_id
    GROUP BY s.cls, x.v
), c AS (
    SELECT cls, v, lead(v) OVER (PARTITION BY cls ORDER BY v) AS nxt,
           sum(m) OVER (PARTITION BY cls ORDER BY v ROWS UNBOUNDED PRECEDING) AS cum,
           sum(m) OVER (PARTITION BY cls) AS tot
    FROM v
), b AS (
    SELECT cls, v, nxt,
           row_number() OVER (PARTITION BY cls ORDER BY abs(2 * cum - tot), v) AS rn
    FROM c WHERE cum >= :k AND tot - cum >= :k
)
SELECT cls, v AS split, nxt,
       CAST(:next_cls + row_number() OVER (ORDER BY cls) AS BIGINT) AS new_cls
FROM b WHERE rn = 1

-- name: kanon_numeric_state
-- Records of classes that did not split are copied; only the split classes' records are joined
-- with their values (the later iterations split few classes).
SELECT s.record_id, s.cls FROM state AS s
WHERE NOT EXISTS (SELECT 1 FROM moves AS m WHERE m.cls = s.cls)
UNION ALL
SELECT s.record_id,
       CASE WHEN x.v > m.split THEN m.new_cls ELSE s.cls END AS cls
FROM state AS s
JOIN moves AS m ON m.cls = s.cls
JOIN val AS x ON x.record_id = s.record_id

-- name: kanon_numeric_bounds
SELECT b.cls, b.lo, coalesce(m.split, b.hi) AS hi
FROM bounds AS b LEFT JOIN moves AS m ON m.cls = b.cls
UNION ALL
SELECT m.new_cls, m.nxt, b.hi
FROM moves AS m JOIN bounds AS b ON b.cls = m.cls

-- name: kanon_category_leaves
-- Per class and leaf value: the child of the class's node on the way down to that leaf.
SELECT lv.cls, lv.leaf, a.node AS child, lv.m
FROM (
    SELECT s.cls, x.v AS leaf, count(*) AS m
    FROM state AS s JOIN val AS x ON x.record_id = s.record_id
    GROUP BY s.cls, x.v
) AS lv
JOIN gen AS g ON g.cls = lv.cls
JOIN nodes AS n ON n.node = g.node
JOIN anc AS a ON a.leaf = lv.leaf AND a.depth = n.depth + 1

-- name: kanon_category_moves
-- Descend one level of the hierarchy: each child held by >= k records of the class becomes a
-- class; children held by fewer stay pooled at the parent node if the pool is empty or >= k,
-- else the class keeps its node (Alg. 1 l.6-7 per class).
WITH g AS (
    SELECT cls, child, sum(m) AS m FROM leaves GROUP BY cls, child
), d AS (
    SELECT cls, sum(CASE WHEN m < :k THEN m ELSE 0 END) AS pool FROM g GROUP BY cls
)
SELECT g.cls, g.child,
       CAST(:next_cls + row_number() OVER (ORDER BY g.cls, g.child) AS BIGINT) AS new_cls
FROM g JOIN d ON d.cls = g.cls
WHERE g.m >= :k AND (d.pool = 0 OR d.pool >= :k)

-- name: kanon_category_state
-- As kanon_numeric_state: only the records of classes that split are looked at.
SELECT s.record_id, s.cls FROM state AS s
WHERE NOT EXISTS (SELECT 1 FROM moves AS m WHERE m.cls = s.cls)
UNION ALL
SELECT s.record_id, coalesce(m.new_cls, s.cls) AS cls
FROM state AS s
JOIN val AS x ON x.record_id = s.record_id
LEFT JOIN leaves AS l ON l.cls = s.cls AND l.leaf = x.v
LEFT JOIN moves AS m ON m.cls = l.cls AND m.child = l.child
WHERE EXISTS (SELECT 1 FROM moves AS c WHERE c.cls = s.cls)

-- name: kanon_category_gen
SELECT g.cls, g.node FROM gen AS g WHERE g.cls IN (SELECT cls FROM cs)
UNION ALL
SELECT new_cls, child FROM moves

-- name: kanon_copy_bounds
-- Classes a step created inherit the parent's interval of every other numeric QI.
SELECT b.cls, b.lo, b.hi FROM bounds AS b WHERE b.cls IN (SELECT cls FROM cs)
UNION ALL
SELECT m.new_cls, b.lo, b.hi FROM moves AS m JOIN bounds AS b ON b.cls = m.cls

-- name: kanon_copy_gen
SELECT g.cls, g.node FROM gen AS g WHERE g.cls IN (SELECT cls FROM cs)
UNION ALL
SELECT m.new_cls, g.node FROM moves AS m JOIN gen AS g ON g.cls = m.cls

-- name: kanon_copy_disc
SELECT d.cls, d.item_id FROM disc AS d WHERE d.cls IN (SELECT cls FROM cs)
UNION ALL
SELECT m.new_cls, d.item_id FROM moves AS m JOIN disc AS d ON d.cls = m.cls

-- name: kanon_set_record_items
-- held(record_id, cls, item_id): the items of the records a step looks at, joined once for
-- kanon_set_rank and kanon_set_picks. Picks join it with the ranking on both keys at once:
-- given items, state and rank in one join, DuckDB paired every record with its class's whole
-- ranking first (18M rows at 1M records; the pairs grow faster than n as classes grow).
-- Where the engine cannot group all classes at once, set_recoding.held_of_slice adds a filter
-- that keeps one slice of classes.
SELECT i.record_id, s.cls, i.item_id
FROM items AS i JOIN state AS s ON s.record_id = i.record_id

-- name: kanon_set_rank
-- §3.2: in-class ranking of the not yet disclosed items by f(alpha) (eq. 1), pruned below
-- theta = max(beta |c|, k) (eq. 2); ties go to the smaller item id. Over one slice's `held`.
SELECT fr.cls, fr.item_id,
       row_number() OVER (PARTITION BY fr.cls ORDER BY fr.f DESC, fr.item_id) AS rnk
FROM (
    SELECT h.cls, h.item_id, count(*) AS f FROM held AS h
    GROUP BY h.cls, h.item_id
) AS fr
JOIN cs AS c ON c.cls = fr.cls
LEFT JOIN disc AS d ON d.cls = fr.cls AND d.item_id = fr.item_id
WHERE d.cls IS NULL AND fr.f >= greatest(:beta * c.n, :k)

-- name: kanon_set_picks
-- §3.3 eq. 3: every record picks its best-ranked item of R ∩ t.A (records without one pick none).
-- Over one slice's `held` and `rank`.
SELECT c.record_id, c.cls, min(r.rnk) AS rnk
FROM held AS c
JOIN rank AS r ON r.cls = c.cls AND r.item_id = c.item_id
GROUP BY c.record_id, c.cls

-- name: kanon_set_groups
SELECT cls, rnk, count(*) AS m FROM picks GROUP BY cls, rnk

-- name: kanon_set_decide
-- §3.4: picks held by >= k records become subclasses; the rest (small picks and records
-- without a pick) is the pool, which stays in the class. A pool of 1..k-1 records is deleted
-- while the budget lasts (smallest pools first), else the class is not specialized (frozen).
-- del = 1: split and delete the pool; del = 0: split and keep the pool.
WITH b AS (
    SELECT cls, sum(m) AS big FROM groups WHERE m >= :k GROUP BY cls
), p AS (
    SELECT b.cls, c.n - b.big AS pool FROM b JOIN cs AS c ON c.cls = b.cls
), q AS (
    SELECT cls, pool,
           sum(CASE WHEN pool > 0 AND pool < :k THEN pool ELSE 0 END) OVER (
               ORDER BY CASE WHEN pool > 0 AND pool < :k THEN 0 ELSE 1 END, pool, cls
               ROWS UNBOUNDED PRECEDING) AS used
    FROM p
)
SELECT cls, pool, CASE WHEN pool = 0 OR pool >= :k THEN 0 ELSE 1 END AS del
FROM q
WHERE pool = 0 OR pool >= :k OR used <= :budget

-- name: kanon_set_moves
SELECT g.cls, g.rnk, r.item_id,
       CAST(:next_cls + row_number() OVER (ORDER BY g.cls, g.rnk) AS BIGINT) AS new_cls
FROM groups AS g
JOIN decide AS d ON d.cls = g.cls
JOIN rank AS r ON r.cls = g.cls AND r.rnk = g.rnk
WHERE g.m >= :k

-- name: kanon_set_deleted
SELECT coalesce(sum(pool), 0) FROM decide WHERE del = 1

-- name: kanon_set_gone
-- The records a step deletes (the pool of a class with del = 1): their item occurrences leave
-- the NCP denominators (kanon_occurrences_of), without a join of all items with the state.
SELECT s.record_id
FROM state AS s
JOIN decide AS d ON d.cls = s.cls
LEFT JOIN picks AS p ON p.record_id = s.record_id
LEFT JOIN moves AS m ON m.cls = p.cls AND m.rnk = p.rnk
WHERE d.del = 1 AND m.new_cls IS NULL

-- name: kanon_set_state
-- Classes that do not split are copied; the records of a splitting class move to their pick's
-- subclass, or stay in the pool, or are deleted with it (del = 1).
SELECT s.record_id, s.cls FROM state AS s
WHERE NOT EXISTS (SELECT 1 FROM decide AS d WHERE d.cls = s.cls)
UNION ALL
SELECT s.record_id, coalesce(m.new_cls, s.cls) AS cls
FROM state AS s
JOIN decide AS d ON d.cls = s.cls
LEFT JOIN picks AS p ON p.record_id = s.record_id
LEFT JOIN moves AS m ON m.cls = p.cls AND m.rnk = p.rnk
WHERE m.new_cls IS NOT NULL OR d.del = 0

-- name: kanon_set_disc
SELECT d.cls, d.item_id FROM disc AS d WHERE d.cls IN (SELECT cls FROM cs)
UNION ALL
SELECT m.new_cls, d.item_id FROM moves AS m JOIN disc AS d ON d.cls = m.cls
UNION ALL
SELECT new_cls, item_id FROM moves

-- name: kanon_ncp_numeric
SELECT coalesce(sum(CAST(c.n AS DOUBLE PRECISION) * (b.hi - b.lo)), 0)
FROM cs AS c JOIN bounds AS b ON b.cls = c.cls

-- name: kanon_ncp_category
SELECT coalesce(sum(CAST(c.n AS DOUBLE PRECISION) * (n.n_leaves - 1)), 0)
FROM cs AS c JOIN gen AS g ON g.cls = c.cls JOIN nodes AS n ON n.node = g.node

-- name: kanon_ncp_set
-- Disclosed item occurrences: every record of a class shows the class's disclosed items.
SELECT coalesce(sum(CAST(c.n AS DOUBLE PRECISION)), 0)
FROM disc AS d JOIN cs AS c ON c.cls = d.cls

-- name: kanon_flat_anc
-- A flat hierarchy: every value is a leaf (depth 1) under the root (node 0, depth 0).
SELECT node AS leaf, node, depth FROM nodes WHERE depth = 1
UNION ALL
SELECT node AS leaf, CAST(0 AS BIGINT) AS node, 0 AS depth FROM nodes WHERE depth = 1

-- name: kanon_hierarchy_nodes
-- The loaded hierarchy's nodes with integer codes (root first), plus a leaf for NULL under the
-- root when the column has NULLs (:null_leaves is 1 then, else 0).
SELECT CAST(row_number() OVER (ORDER BY h.depth, h.node) - 1 AS BIGINT) AS node,
       h.node AS label, h.depth,
       h.n_leaves + CASE WHEN h.depth = 0 THEN :null_leaves ELSE 0 END AS n_leaves
FROM hierarchy_nodes AS h WHERE h.hierarchy_id = :hierarchy_id

-- name: kanon_hierarchy_anc
-- (leaf, ancestor-or-self, depth of the ancestor) for every leaf of the hierarchy.
WITH RECURSIVE up(leaf, node) AS (
    SELECT h.node, h.node FROM hierarchy_nodes AS h
    WHERE h.hierarchy_id = :hierarchy_id
      AND NOT EXISTS (SELECT 1 FROM hierarchy_nodes AS c
                      WHERE c.hierarchy_id = :hierarchy_id AND c.parent = h.node)
    UNION ALL
    SELECT u.leaf, h.parent FROM up AS u
    JOIN hierarchy_nodes AS h ON h.hierarchy_id = :hierarchy_id AND h.node = u.node
    WHERE h.parent IS NOT NULL
)
SELECT l.node AS leaf, a.node, a.depth
FROM up AS u JOIN nodes AS l ON l.label = u.leaf JOIN nodes AS a ON a.label = u.node

-- name: kanon_null_leaf_nodes
SELECT node, label, depth, n_leaves FROM nodes
UNION ALL
SELECT CAST(:null_node AS BIGINT), CAST(NULL AS TEXT), 1, CAST(1 AS BIGINT)

-- name: kanon_null_leaf_anc
SELECT leaf, node, depth FROM anc
UNION ALL
SELECT CAST(:null_node AS BIGINT), CAST(:null_node AS BIGINT), 1
UNION ALL
SELECT CAST(:null_node AS BIGINT), CAST(0 AS BIGINT), 0

-- name: kanon_tight_bounds
-- The published interval of a numeric QI: its final class's live members' min and max (after
-- every split and deletion), never the wider interval the search carried down from a parent.
SELECT s.cls, min(v.v) AS lo, max(v.v) AS hi
FROM state AS s JOIN val AS v ON v.record_id = s.record_id
GROUP BY s.cls

-- name: kanon_published_items
SELECT s.record_id, d.item_id
FROM state AS s JOIN disc AS d ON d.cls = s.cls

-- name: kanon_class_size_histogram
SELECT n, count(*) FROM cs GROUP BY n ORDER BY n

-- name: kanon_verify_records
-- Published records: how many, how many distinct ids, how many of them are input records.
SELECT count(*), count(DISTINCT p.record_id), count(o.record_id)
FROM published AS p LEFT JOIN records AS o ON o.record_id = p.record_id

-- name: kanon_verify_numeric
-- pairs(record_id, v original value, l published label): labels that do not cover the value.
-- A label that is neither the value nor a well-formed interval counts as not covering (the
-- casts run only on well-formed intervals, so a tampered label is a failure, not an error).
SELECT count(*) FROM pairs
WHERE NOT coalesce(
    l = CAST(v AS TEXT)
    OR CASE WHEN l ~ '^\[-?[0-9]{1,18}--?[0-9]{1,18}\]$'
            THEN v >= CAST(regexp_replace(l, '^\[(-?[0-9]+)-(-?[0-9]+)\]$', '\1') AS BIGINT)
                 AND v <= CAST(regexp_replace(l, '^\[(-?[0-9]+)-(-?[0-9]+)\]$', '\2') AS BIGINT)
            ELSE FALSE END,
    FALSE)

-- name: kanon_verify_flat
SELECT count(*) FROM pairs
WHERE NOT coalesce(l = '*' OR l = v OR (l IS NULL AND v IS NULL), FALSE)

-- name: kanon_verify_hierarchy
-- A label covers a value when it is the value's leaf or one of its ancestors (NULL: the root).
WITH RECURSIVE up(leaf, node) AS (
    SELECT node, node FROM hierarchy_nodes WHERE hierarchy_id = :hierarchy_id
    UNION ALL
    SELECT u.leaf, h.parent FROM up AS u
    JOIN hierarchy_nodes AS h ON h.hierarchy_id = :hierarchy_id AND h.node = u.node
    WHERE h.parent IS NOT NULL
)
SELECT count(*) FROM pairs AS p
WHERE NOT coalesce(
    (p.v IS NULL AND (p.l IS NULL OR p.l IN (
        SELECT node FROM hierarchy_nodes WHERE hierarchy_id = :hierarchy_id AND parent IS NULL)))
    OR EXISTS (SELECT 1 FROM up AS u WHERE u.leaf = p.v AND u.node = p.l),
    FALSE)

-- name: kanon_verify_items
-- Published items that the record does not have, or of a record that is not published.
SELECT count(*) FROM published AS p
LEFT JOIN items AS i ON i.record_id = p.record_id AND i.item_id = p.item_id
LEFT JOIN records AS r ON r.record_id = p.record_id
WHERE i.record_id IS NULL OR r.record_id IS NULL

-- name: kanon_verify_repeated_items
-- Published (record, item) rows beyond the first of their kind: a set holds each item once, and
-- the grouping's proof of exactness (models/kanon/verify_groups.py) relies on it.
SELECT coalesce(sum(n - 1), 0) FROM (
    SELECT count(*) AS n FROM published GROUP BY record_id, item_id HAVING count(*) > 1
) AS repeated
