-- Hiding personal tendency by similarity-based swapping (Gunawan & Mambo, Future Internet 2019).
-- Canonical dialect: PostgreSQL. Logical tables: items(record_id, item_id), dict(item_id, label),
-- cats(item_id, category, category_label), catmap(item_label, category_label), tend (one row per
-- record: its length, categories, tendency category and kind), pool (unmatched records of one
-- kind in a round), pairs(record_id, partner_id, kind, jc, round) with both directions of each
-- pair, moves(record_id, item_id, to_record), published(record_id, item_id).
-- Pseudo-random orders are md5 hex digests of (seed, round, ids) sorted byte-wise (COLLATE "C"),
-- so both engines draw the same order.

-- name: swap_category_lines
-- One row per non-empty line of a category file 'item<TAB>category'; an optional header line
-- 'item<TAB>category' is skipped. tab_at = 0 or a third field marks a malformed line.
SELECT pos, trim(split_part(line, :tab, 1)) AS item_label,
       trim(split_part(line, :tab, 2)) AS category_label,
       strpos(line, :tab) AS tab_at, split_part(line, :tab, 3) AS rest
FROM lines
WHERE line IS NOT NULL AND trim(line) <> ''
  AND NOT (pos = 1 AND lower(line) = concat('item', :tab, 'category'))

-- name: swap_category_bad_lines
SELECT min(pos), count(*) FROM catlines
WHERE tab_at = 0 OR item_label = '' OR category_label = '' OR rest <> ''

-- name: swap_category_conflicts
SELECT item_label, min(category_label), max(category_label), count(*) OVER ()
FROM catlines GROUP BY item_label HAVING count(DISTINCT category_label) > 1
ORDER BY item_label LIMIT 5

-- name: swap_category_map_file
SELECT DISTINCT item_label, category_label FROM catlines

-- name: swap_category_missing
-- Items of the data that the category map does not cover (first few, and how many).
SELECT d.label, count(*) OVER () FROM dict d
WHERE NOT EXISTS (SELECT 1 FROM catmap m WHERE m.item_label = d.label)
ORDER BY d.item_id LIMIT 5

-- name: swap_category_add_uncategorized
INSERT INTO catmap (item_label, category_label)
SELECT d.label, :label FROM dict d
WHERE NOT EXISTS (SELECT 1 FROM catmap m WHERE m.item_label = d.label)

-- name: swap_category_map_hierarchy
-- The ancestor at depth :level (root 0) of every item, walking up the hierarchy; an item whose
-- leaf is not deeper than :level is its own category.
WITH RECURSIVE up(item_label, node, parent, depth) AS (
    SELECT n.node, n.node, n.parent, n.depth FROM hierarchy_nodes n
    WHERE n.hierarchy_id = :hierarchy_id AND n.node IN (SELECT label FROM dict)
    UNION ALL
    SELECT u.item_label, p.node, p.parent, p.depth FROM up u
    JOIN hierarchy_nodes p ON p.hierarchy_id = :hierarchy_id AND p.node = u.parent
    WHERE u.depth > :level
)
SELECT item_label, node AS category_label FROM (
    SELECT item_label, node, row_number() OVER (PARTITION BY item_label ORDER BY depth) AS rn
    FROM up
) AS ranked WHERE rn = 1

-- name: swap_categories_from_map
-- Category ids follow the byte order of the category labels.
SELECT d.item_id,
       CAST(dense_rank() OVER (ORDER BY m.category_label COLLATE "C") - 1 AS INT) AS category,
       m.category_label
FROM dict d JOIN catmap m ON m.item_label = d.label

-- name: swap_categories_random
-- The paper's artificial categorization (Sec. 5.1): items in a seeded random order, dealt round
-- robin into :n_categories categories, so sizes differ by at most one and never overlap.
SELECT item_id, CAST(mod(rn - 1, :n_categories) AS INT) AS category,
       CAST(mod(rn - 1, :n_categories) + 1 AS TEXT) AS category_label
FROM (
    SELECT item_id, row_number() OVER (
        ORDER BY md5(concat(CAST(:seed AS TEXT), ':c:', CAST(item_id AS TEXT))) COLLATE "C",
                 item_id) AS rn
    FROM dict
) AS shuffled

-- name: swap_category_shape
SELECT count(DISTINCT c.category), count(*), min(n), max(n)
FROM cats c JOIN (SELECT category, count(*) AS n FROM cats GROUP BY category) AS s
  ON s.category = c.category

-- name: swap_tendency
-- Eq. 4: WR(t, g) = |{i in t : i in g}|; Eq. 5: MTV(t) = |t| / #categories of t. Alg. 1: a
-- record has a tendency when max WR > MTV, compared exactly as max WR * #categories > |t|; its
-- tendency is the category of highest weight (ties: the smallest category id). Records with
-- one category only and |t| > 1 are the subjects of full swapping (Sec. 4.4, Alg. 4).
WITH w AS (
    SELECT i.record_id, c.category, count(*) AS weight
    FROM items i JOIN cats c ON c.item_id = i.item_id
    GROUP BY i.record_id, c.category
), r AS (
    SELECT record_id, sum(weight) AS len, count(*) AS ncat, max(weight) AS maxw
    FROM w GROUP BY record_id
), top AS (
    SELECT record_id, category, weight,
           row_number() OVER (PARTITION BY record_id ORDER BY weight DESC, category) AS rn
    FROM w
)
SELECT r.record_id, CAST(r.len AS INT) AS len, CAST(r.ncat AS INT) AS ncat, t.category,
       CAST(t.weight AS INT) AS weight,
       CASE WHEN r.maxw * r.ncat > r.len THEN 'partial'
            WHEN r.ncat = 1 AND r.len > 1 THEN 'full'
            ELSE 'none' END AS kind
FROM r JOIN top t ON t.record_id = r.record_id AND t.rn = 1

-- name: swap_tendency_counts
SELECT kind, count(*) FROM tend GROUP BY kind ORDER BY kind

-- name: swap_pool
-- Unmatched records of one kind, ordered by tendency category, then a seeded random order.
SELECT t.record_id, t.category, t.len,
       row_number() OVER (ORDER BY t.category, md5(concat(CAST(:seed AS TEXT), ':', :kind, ':',
           CAST(:round AS TEXT), ':', CAST(t.record_id AS TEXT))) COLLATE "C", t.record_id) AS pos
FROM tend t
WHERE t.kind = :kind AND NOT EXISTS (SELECT 1 FROM pairs p WHERE p.record_id = t.record_id)

-- name: swap_pool_shape
SELECT count(*), count(DISTINCT category) FROM pool

-- name: swap_shuffle_candidates
-- Position i pairs with i + :half in the (category, random) order: two records of one category
-- meet only if that category holds more than half of the pool. Alg. 2 keeps candidates of a
-- different tendency category.
SELECT a.record_id AS a, b.record_id AS b
FROM pool a JOIN pool b ON b.pos = a.pos + :half
WHERE a.category <> b.category

-- name: swap_candidate_overlap
-- Candidate pairs sharing at least one item (Jaccard > 0), found through the items of each side.
SELECT c.a, c.b, count(*) AS shared
FROM cand c
JOIN items ia ON ia.record_id = c.a
JOIN items ib ON ib.record_id = c.b AND ib.item_id = ia.item_id
GROUP BY c.a, c.b

-- name: swap_accept_disjoint
-- Candidates sharing no item: Jaccard 0, the least possible, and no collision either way.
SELECT c.a, c.b, CAST(0.0 AS DOUBLE PRECISION) AS jc FROM cand c
WHERE NOT EXISTS (SELECT 1 FROM overlap o WHERE o.a = c.a AND o.b = c.b)

-- name: swap_all_candidates
-- Exact stage: every pair of the pool with different tendency categories.
SELECT pa.record_id AS a, pb.record_id AS b
FROM pool pa JOIN pool pb ON pb.record_id > pa.record_id AND pb.category <> pa.category

-- name: swap_window_candidates
-- Window stage: each record meets the next :window records of a seeded random cyclic order
-- (any category order), keeping pairs of different tendency categories.
WITH ordered AS (
    SELECT record_id, category, row_number() OVER (
        ORDER BY md5(concat(CAST(:seed AS TEXT), ':w:', CAST(:round AS TEXT), ':',
                            CAST(record_id AS TEXT))) COLLATE "C", record_id) - 1 AS rpos
    FROM pool
), reach AS (
    -- The target position is computed first, so the join below is a plain equi-join (with the
    -- expression in the join condition DuckDB fell back to a nested loop: 16 s per round).
    SELECT x.record_id, x.category, mod(x.rpos + g.k, :n) AS target
    FROM ordered x
    CROSS JOIN generate_series(CAST(1 AS BIGINT), CAST(:window AS BIGINT)) AS g(k)
)
SELECT DISTINCT least(r.record_id, y.record_id) AS a, greatest(r.record_id, y.record_id) AS b
FROM reach r JOIN ordered y ON y.rpos = r.target
WHERE r.category <> y.category

-- name: swap_score_candidates
-- Candidate pairs (a < b) without collision (Alg. 2: a shared item of either tendency category
-- would be lost), ranked by Jaccard similarity, then a seeded random order. The shared items are
-- looked up in the pool's own items (pi), read once: joining the candidates with the whole
-- items table on both sides built its hash tables from every record (exact stage at 1M, 1.5M
-- candidate pairs of 1,800 records: 10-15 s against 7-8 s).
WITH pi AS (
    SELECT i.record_id, i.item_id, k.category
    FROM items i
    JOIN pool p ON p.record_id = i.record_id
    JOIN cats k ON k.item_id = i.item_id
), ov AS (
    SELECT c.a, c.b, count(*) AS shared,
           count(*) FILTER (WHERE ia.category = pa.category OR ia.category = pb.category)
               AS collide
    FROM cand c
    JOIN pool pa ON pa.record_id = c.a
    JOIN pool pb ON pb.record_id = c.b
    JOIN pi ia ON ia.record_id = c.a
    JOIN pi ib ON ib.record_id = c.b AND ib.item_id = ia.item_id
    GROUP BY c.a, c.b
), scored AS (
    SELECT c.a, c.b,
           CAST(coalesce(ov.shared, 0) AS DOUBLE PRECISION)
           / CAST(pa.len + pb.len - coalesce(ov.shared, 0) AS DOUBLE PRECISION) AS jc
    FROM cand c
    JOIN pool pa ON pa.record_id = c.a
    JOIN pool pb ON pb.record_id = c.b
    LEFT JOIN ov ON ov.a = c.a AND ov.b = c.b
    WHERE coalesce(ov.collide, 0) = 0
)
SELECT a, b, jc,
       row_number() OVER (ORDER BY jc, md5(concat(CAST(:seed AS TEXT), ':e:', CAST(a AS TEXT),
           ':', CAST(b AS TEXT))) COLLATE "C", a, b) AS rk
FROM scored

-- name: swap_greedy_accept
-- One round of greedy matching over the live edges (both records still free): an edge is taken
-- when it is the best-ranked live edge at both of its records. Repeating this until no edge is
-- live gives exactly the sequential greedy matching that takes pairs in increasing (Jaccard,
-- random) order. The caller keeps `edges` live (swap_live_edges after every round), so no
-- anti-join on all pairs is needed here (it cost a hash table of every pair per round: 35 s
-- of 80 exact rounds at 1M). Written with a window over the edge ends and one GROUP BY, no
-- join on the live edges: PostgreSQL estimated one live edge after anti-joins and then joined
-- them by nested loops (1M synthetic: 60 s a round).
WITH ends AS (
    SELECT a AS node, a, b, jc, rk FROM edges
    UNION ALL
    SELECT b AS node, a, b, jc, rk FROM edges
), ranked AS (
    SELECT a, b, jc, rk, min(rk) OVER (PARTITION BY node) AS node_rk FROM ends
)
SELECT a, b, min(jc) AS jc FROM ranked WHERE rk = node_rk
GROUP BY a, b HAVING count(*) = 2

-- name: swap_live_edges
-- The edges of which neither record was just matched (accepted: the pairs of the last round).
WITH taken AS (SELECT a AS record_id FROM accepted UNION ALL SELECT b FROM accepted)
SELECT e.a, e.b, e.jc, e.rk FROM edges e
WHERE NOT EXISTS (SELECT 1 FROM taken t WHERE t.record_id = e.a)
  AND NOT EXISTS (SELECT 1 FROM taken t WHERE t.record_id = e.b)

-- name: swap_insert_pairs
INSERT INTO pairs (record_id, partner_id, kind, jc, round)
SELECT a, b, :kind, jc, :round FROM accepted
UNION ALL
SELECT b, a, :kind, jc, :round FROM accepted

-- name: swap_random_pairs
-- RandSwap baseline: records with a tendency (either kind) in a seeded random order, paired
-- 1-2, 3-4, ..., with no condition on categories, similarity or collisions.
WITH ordered AS (
    SELECT record_id, kind, row_number() OVER (
        ORDER BY md5(concat(CAST(:seed AS TEXT), ':r:', CAST(record_id AS TEXT))) COLLATE "C",
                 record_id) AS pos
    FROM tend WHERE kind <> 'none'
), matched AS (
    SELECT a.record_id AS a, b.record_id AS b, a.kind
    FROM ordered a JOIN ordered b ON b.pos = a.pos + 1
    WHERE mod(a.pos, 2) = 1
)
SELECT a AS record_id, b AS partner_id, kind, CAST(NULL AS DOUBLE PRECISION) AS jc,
       0 AS round FROM matched
UNION ALL
SELECT b, a, kind, CAST(NULL AS DOUBLE PRECISION), 0 FROM matched

-- name: swap_moves_tendency
-- Alg. 3: the items of a paired record's tendency category go to its partner (for full
-- swapping that is every item of the record).
SELECT i.record_id, i.item_id, p.partner_id AS to_record
FROM pairs p
JOIN tend t ON t.record_id = p.record_id
JOIN items i ON i.record_id = p.record_id
JOIN cats c ON c.item_id = i.item_id AND c.category = t.category

-- name: swap_moves_random
-- RandSwap: a paired record gives as many randomly chosen items as its tendency weight.
SELECT record_id, item_id, to_record FROM (
    SELECT i.record_id, i.item_id, p.partner_id AS to_record, t.weight,
           row_number() OVER (PARTITION BY i.record_id ORDER BY md5(concat(
               CAST(:seed AS TEXT), ':m:', CAST(i.record_id AS TEXT), ':',
               CAST(i.item_id AS TEXT))) COLLATE "C", i.item_id) AS rn
    FROM pairs p
    JOIN tend t ON t.record_id = p.record_id
    JOIN items i ON i.record_id = p.record_id
) AS ranked WHERE rn <= weight

-- name: swap_moves_suppress
-- Tendency-targeted suppression (PartSupp baseline): the items of the tendency category of every
-- record with a tendency leave it for no record (to_record NULL; see swap_publish_suppressed).
SELECT i.record_id, i.item_id, CAST(NULL AS BIGINT) AS to_record
FROM tend t
JOIN items i ON i.record_id = t.record_id
JOIN cats c ON c.item_id = i.item_id AND c.category = t.category
WHERE t.kind <> 'none'

-- name: swap_publish
-- The swapped database: every item not moved stays; moved items join their new record. An item
-- arriving where it already stays (there and not moved away) collides and is kept once: that is
-- the item loss. Written as UNION ALL with the colliding arrivals left out, rather than as UNION
-- (a DISTINCT over every row: 62 s of a 10M run). The two are equal because neither branch
-- holds a duplicate: items is a set of (record, item) rows, a record gives an item at most once,
-- and the moves into one record come from one partner (pairs is a matching). (PostgreSQL 15
-- planned DISTINCT over UNION ALL as a parallel partial hash aggregate for 40,000 estimated
-- groups: over 30 minutes at 1M records.)
SELECT i.record_id, i.item_id FROM items i
WHERE NOT EXISTS (SELECT 1 FROM moves m WHERE m.record_id = i.record_id AND m.item_id = i.item_id)
UNION ALL
SELECT m.to_record, m.item_id FROM moves m
LEFT JOIN items i ON i.record_id = m.to_record AND i.item_id = m.item_id
LEFT JOIN moves s ON s.record_id = m.to_record AND s.item_id = m.item_id
WHERE i.record_id IS NULL OR s.record_id IS NOT NULL

-- name: swap_publish_suppressed
-- Tendency suppression: the items not moved, nothing arrives. (Through swap_publish, with its
-- UNION ALL of an empty branch under DISTINCT, PostgreSQL 15 took over 400 s on BMS2.)
SELECT i.record_id, i.item_id FROM items i
WHERE NOT EXISTS (SELECT 1 FROM moves m WHERE m.record_id = i.record_id AND m.item_id = i.item_id)

-- name: swap_pair_summary
-- Per kind: pairs, records, moved items, pairs with positive Jaccard similarity, mean Jaccard.
WITH p AS (SELECT record_id AS a, partner_id AS b, kind FROM pairs WHERE record_id < partner_id),
ov AS (
    SELECT p.a, p.b, count(*) AS shared FROM p
    JOIN items ia ON ia.record_id = p.a
    JOIN items ib ON ib.record_id = p.b AND ib.item_id = ia.item_id
    GROUP BY p.a, p.b
), scored AS (
    SELECT p.kind, CAST(coalesce(ov.shared, 0) AS DOUBLE PRECISION)
           / CAST(ta.len + tb.len - coalesce(ov.shared, 0) AS DOUBLE PRECISION) AS jc
    FROM p
    JOIN tend ta ON ta.record_id = p.a
    JOIN tend tb ON tb.record_id = p.b
    LEFT JOIN ov ON ov.a = p.a AND ov.b = p.b
)
SELECT kind, count(*), count(*) FILTER (WHERE jc > 0), avg(jc), max(jc)
FROM scored GROUP BY kind ORDER BY kind

-- name: swap_count_rows
SELECT count(*) FROM t

-- name: swap_published_figures
-- The run's "hidden" and "tendency changed" counts per kind, in one pass over the published items
-- of the records a swap touched (bound as `touched`: pairs, or tend itself to take every
-- record). A record no swap touched is published exactly as it was, so it still shows its
-- tendency: neither hidden nor changed, and it need not be read. Hidden (Defs. 3-4): the
-- published record holds no item of the original tendency category. Changed: the published
-- record has no tendency, or one of another category, by Eqs. 4-5 / Alg. 1 exactly as in
-- swap_tendency (kind 'partial' when max WR * #categories > |t|, 'full' when one category and
-- |t| > 1; ties to the smallest category id). A record whose published record is empty is both.
WITH x AS (
    SELECT t.record_id, t.kind, t.category FROM tend t
    WHERE t.kind <> 'none' AND t.record_id IN (SELECT record_id FROM touched)
), w AS (
    SELECT p.record_id, c.category, count(*) AS weight
    FROM published p
    JOIN x ON x.record_id = p.record_id
    JOIN cats c ON c.item_id = p.item_id
    GROUP BY p.record_id, c.category
), r AS (
    SELECT record_id, sum(weight) AS len, count(*) AS ncat, max(weight) AS maxw
    FROM w GROUP BY record_id
), top AS (
    SELECT record_id, category,
           row_number() OVER (PARTITION BY record_id ORDER BY weight DESC, category) AS rn
    FROM w
)
SELECT x.kind,
       count(*) FILTER (WHERE own.record_id IS NULL) AS hidden,
       count(*) FILTER (WHERE r.record_id IS NULL
                        OR NOT (r.maxw * r.ncat > r.len OR (r.ncat = 1 AND r.len > 1))
                        OR tp.category <> x.category) AS changed
FROM x
LEFT JOIN r ON r.record_id = x.record_id
LEFT JOIN top tp ON tp.record_id = x.record_id AND tp.rn = 1
LEFT JOIN w own ON own.record_id = x.record_id AND own.category = x.category
GROUP BY x.kind ORDER BY x.kind

-- name: swap_item_balance
-- Per item, original and published occurrences: items lost, and items that gained (never
-- possible for a swap).
WITH fo AS (SELECT item_id, count(*) AS f FROM items GROUP BY item_id),
fp AS (SELECT item_id, count(*) AS f FROM published GROUP BY item_id)
SELECT coalesce(sum(coalesce(fo.f, 0)), 0),
       coalesce(sum(abs(coalesce(fo.f, 0) - coalesce(fp.f, 0))), 0),
       count(*) FILTER (WHERE coalesce(fp.f, 0) > coalesce(fo.f, 0))
FROM fo FULL OUTER JOIN fp ON fp.item_id = fo.item_id

-- name: swap_verify_diff
-- The records whose published item set differs from the original, with how many original items
-- their published record lacks (gone) and how many it gained (came): one FULL OUTER JOIN of the
-- two tables (EXCEPT both ways built two hash tables of every row: ~1.5x the time at 1M).
SELECT coalesce(o.record_id, p.record_id) AS record_id,
       count(o.record_id) AS gone, count(p.record_id) AS came
FROM items o
FULL OUTER JOIN published p ON p.record_id = o.record_id AND p.item_id = o.item_id
WHERE o.record_id IS NULL OR p.record_id IS NULL
GROUP BY coalesce(o.record_id, p.record_id)

-- name: swap_verify_changed
-- The verifier's view of what a swap changed, over the changed records only (diff, from
-- swap_verify_diff; tend: the tendencies recomputed from the original items, of at least these
-- records): how many changed, those without a tendency (a swap never touches them), those
-- still holding an item of their original tendency category (not hidden, Defs. 3-4), the
-- hidden ones per kind, and the records that appeared (no original item) or were emptied (no
-- published item).
WITH pub AS (
    SELECT p.record_id, count(*) FILTER (WHERE c.category = t.category) AS own
    FROM published p
    JOIN diff d ON d.record_id = p.record_id
    LEFT JOIN tend t ON t.record_id = p.record_id
    LEFT JOIN cats c ON c.item_id = p.item_id
    GROUP BY p.record_id
)
SELECT count(*),
       count(*) FILTER (WHERE t.kind IS NULL OR t.kind = 'none'),
       count(*) FILTER (WHERE t.kind <> 'none' AND u.own > 0),
       count(*) FILTER (WHERE t.kind = 'partial' AND coalesce(u.own, 0) = 0),
       count(*) FILTER (WHERE t.kind = 'full' AND coalesce(u.own, 0) = 0),
       count(*) FILTER (WHERE t.record_id IS NULL),
       count(*) FILTER (WHERE u.record_id IS NULL)
FROM diff d
LEFT JOIN tend t ON t.record_id = d.record_id
LEFT JOIN pub u ON u.record_id = d.record_id

-- name: swap_verify_swappable_kinds
-- Kinds (partial, full) held by records of at least two tendency categories: where a swap is
-- possible at all, so a run that hides nothing there has not done its job.
SELECT count(*) FROM (
    SELECT kind FROM tend WHERE kind <> 'none'
    GROUP BY kind HAVING count(DISTINCT category) > 1
) AS k

-- name: swap_verify_suppressed_extra
-- Tendency suppression: published pairs that are not the original minus the tendency items
-- (should be none), counted both ways.
WITH expected AS (
    SELECT i.record_id, i.item_id FROM items i
    LEFT JOIN tend t ON t.record_id = i.record_id
    LEFT JOIN cats c ON c.item_id = i.item_id
    WHERE t.kind IS NULL OR t.kind = 'none' OR c.category IS NULL OR c.category <> t.category
)
SELECT (SELECT count(*) FROM (SELECT record_id, item_id FROM published
                              EXCEPT SELECT record_id, item_id FROM expected) AS a)
     + (SELECT count(*) FROM (SELECT record_id, item_id FROM expected
                              EXCEPT SELECT record_id, item_id FROM published) AS b)
