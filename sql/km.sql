-- k^m-anonymity by global recoding along a hierarchy cut (Acs et al., Terrovitis et al.).
-- Canonical dialect: PostgreSQL. Logical tables:
--   items(record_id, item_id), dict(item_id, label): the dataset's set-valued column;
--   hierarchy_nodes(hierarchy_id, node, parent, depth, n_leaves): the catalog;
--   labelanc(item_id, node, depth): every data item with its ancestors-or-self (labels);
--   hnode(node_id, label, depth, n_leaves, parent_id): hierarchy nodes above some data item;
--   anc(item_id, node_id, depth): labelanc by node id;
--   occ(item_id, n): occurrences (support) of each original item;
--   cut(item_id, node_id, leaf_id): the generalization R, item -> its node of the cut;
--   g(record_id, node_id): the generalized record-item rows <R, D>.

-- name: km_hierarchy_nodes_count
SELECT count(*) FROM hierarchy_nodes WHERE hierarchy_id = :hierarchy_id

-- name: km_label_ancestors
-- Every data item with each of its ancestors-or-self, found by walking up the parent links.
WITH RECURSIVE up(item_id, node, parent, depth) AS (
    SELECT d.item_id, h.node, h.parent, h.depth
    FROM dict AS d
    JOIN hierarchy_nodes AS h ON h.node = d.label AND h.hierarchy_id = :hierarchy_id
    UNION ALL
    SELECT up.item_id, h.node, h.parent, h.depth
    FROM up
    JOIN hierarchy_nodes AS h ON h.node = up.parent AND h.hierarchy_id = :hierarchy_id
)
SELECT item_id, node, depth FROM up

-- name: km_items_without_leaf
-- Items of the data the hierarchy does not cover (first few, and how many).
SELECT d.label, count(*) OVER () FROM dict AS d
WHERE d.item_id NOT IN (SELECT item_id FROM labelanc)
ORDER BY d.item_id LIMIT 5

-- name: km_nodes
-- Nodes with at least one data item below them. Ids follow (depth, first data item below), so
-- they are the same on every backend without sorting text; nodes at one depth are disjoint.
WITH n AS (
    SELECT node AS label, min(depth) AS depth, min(item_id) AS first_item
    FROM labelanc GROUP BY node
), numbered AS (
    SELECT label, depth,
           CAST(row_number() OVER (ORDER BY depth, first_item) AS BIGINT) AS node_id
    FROM n
)
SELECT x.node_id, x.label, x.depth, h.n_leaves, p.node_id AS parent_id
FROM numbered AS x
JOIN hierarchy_nodes AS h ON h.node = x.label AND h.hierarchy_id = :hierarchy_id
LEFT JOIN numbered AS p ON p.label = h.parent

-- name: km_item_ancestors
SELECT a.item_id, n.node_id, n.depth
FROM labelanc AS a JOIN hnode AS n ON n.label = a.node

-- name: km_occurrences
SELECT item_id, count(*) AS n FROM items GROUP BY item_id

-- name: km_identity_cut
-- Alg. 2 l.4: R(i) = {i}, every item is its own leaf node.
SELECT a.item_id, a.node_id, a.node_id AS leaf_id
FROM anc AS a
JOIN (SELECT item_id, max(depth) AS depth FROM anc GROUP BY item_id) AS leaf
    ON leaf.item_id = a.item_id AND leaf.depth = a.depth

-- name: km_generalized
-- <R, D>: each record's items replaced by their cut nodes (global recoding), duplicates merged.
SELECT DISTINCT i.record_id, c.node_id
FROM items AS i JOIN cut AS c ON c.item_id = i.item_id

-- name: km_generalized_update
-- <R, D> of the cut from prev, <R, D> of an earlier cut (cutsearch.py): a node not among the
-- changed ones (km_changed_nodes) holds the same items under both cuts, so the same records,
-- and its rows are kept; the rows of the changed nodes of the cut are found again from the
-- items. The same rows as km_generalized (a test compares them) without grouping them all.
SELECT p.record_id, p.node_id
FROM prev AS p LEFT JOIN changed AS ch ON ch.node_id = p.node_id
WHERE ch.node_id IS NULL
UNION ALL
SELECT DISTINCT i.record_id, c.node_id
FROM items AS i
JOIN cut AS c ON c.item_id = i.item_id
JOIN changed AS ch ON ch.node_id = c.node_id

-- name: km_generalized_counts
-- <R, D> with, per record and node, how many original items of the record lie under the node
-- (exactcheck.py: a generalized itemset is the image of an ℓ-itemset of the record only if the
-- record holds at least ℓ items under its nodes).
SELECT i.record_id, c.node_id, count(*) AS c
FROM items AS i JOIN cut AS c ON c.item_id = i.item_id
GROUP BY i.record_id, c.node_id

-- name: km_changed_nodes
-- The nodes whose items differ between two cuts (enumsteer.py): new or grown nodes of the next
-- cut, and nodes of the previous one that lost items or are gone.
SELECT node_id FROM (
    SELECT item_id, node_id FROM cut EXCEPT SELECT item_id, node_id FROM prevcut
) AS grown
UNION
SELECT node_id FROM (
    SELECT item_id, node_id FROM prevcut EXCEPT SELECT item_id, node_id FROM cut
) AS shrunk

-- name: km_node_successors
-- Each changed node of the previous cut and the node of the next cut its items lie under
-- (exact.py: the images of the previous round's violating itemsets). Merges only unite nodes,
-- so an old node has one successor; a node of both cuts with the same items maps to itself
-- and is not listed.
SELECT DISTINCT p.node_id AS old_node, c.node_id AS new_node
FROM prevcut AS p
JOIN cut AS c ON c.item_id = p.item_id
JOIN changed AS ch ON ch.node_id = p.node_id

-- name: km_touched_counts
-- km_generalized_counts of the records holding a changed node, each node flagged (fresh = 1)
-- when it changed: every holder of an image with a changed node is among these records. Read
-- from the items, not from a full km_generalized_counts of the cut: the records holding a
-- changed node are found by their items under one, so a round groups only their rows.
-- (A join, not IN, flags the nodes: Spark takes IN subqueries only as filters.)
SELECT i.record_id, c.node_id, count(*) AS c,
       CASE WHEN f.node_id IS NULL THEN 0 ELSE 1 END AS fresh
FROM items AS i
JOIN cut AS c ON c.item_id = i.item_id
LEFT JOIN changed AS f ON f.node_id = c.node_id
WHERE i.record_id IN (
    SELECT t.record_id
    FROM items AS t
    JOIN cut AS tc ON tc.item_id = t.item_id
    JOIN changed AS ch ON ch.node_id = tc.node_id
)
GROUP BY i.record_id, c.node_id, f.node_id

-- name: km_merge_costs
-- For every node P above a cut node, the increase of the error if the cut nodes below P are
-- merged into P (the neighbour of R at an item below P, Sec. V): with error 'ncp' the increase
-- of sum over occurrences of (n_leaves - 1) (NCP up to the constant factor 1/((|I|-1)|D|));
-- with error 'share' the occurrences that become generalized. Integers: no float ties.
SELECT a.node_id,
       sum(CASE WHEN :error = 'share'
                THEN (CASE WHEN c.node_id = c.leaf_id THEN o.n ELSE 0 END)
                ELSE o.n * (p.n_leaves - cn.n_leaves) END) AS cost
FROM cut AS c
JOIN occ AS o ON o.item_id = c.item_id
JOIN hnode AS cn ON cn.node_id = c.node_id
JOIN anc AS a ON a.item_id = c.item_id AND a.depth < cn.depth
JOIN hnode AS p ON p.node_id = a.node_id
GROUP BY a.node_id

-- name: km_choose_merges
-- Alg. 2 l.13-14 for every violating itemset at once: each proposes, among the parents of its
-- nodes, the merge of least error (ties: the smaller node id); vnodes(vid, node_id) lists the
-- itemsets. Of the distinct proposals only the cheapest share :batch is applied (at least one),
-- so the search stays close to one merge at a time while a round fixes many itemsets.
WITH proposals AS (
    SELECT DISTINCT node_id, cost FROM (
        SELECT h.parent_id AS node_id, c.cost,
               row_number() OVER (PARTITION BY v.vid ORDER BY c.cost, h.parent_id) AS rn
        FROM vnodes AS v
        JOIN hnode AS h ON h.node_id = v.node_id
        JOIN costs AS c ON c.node_id = h.parent_id
    ) AS ranked
    WHERE rn = 1
), ordered AS (
    SELECT node_id, row_number() OVER (ORDER BY cost, node_id) AS r, count(*) OVER () AS n
    FROM proposals
)
SELECT node_id FROM ordered
WHERE r <= greatest(1, CAST(ceil(n * :batch) AS BIGINT))

-- name: km_apply_merges
-- The next cut: an item below a chosen node moves to the highest chosen node above it.
SELECT c.item_id, coalesce(m.node_id, c.node_id) AS node_id, c.leaf_id
FROM cut AS c
LEFT JOIN (
    SELECT a.item_id, a.node_id,
           row_number() OVER (PARTITION BY a.item_id ORDER BY a.depth) AS rn
    FROM anc AS a JOIN chosen AS ch ON ch.node_id = a.node_id
) AS m ON m.item_id = c.item_id AND m.rn = 1

-- name: km_cut_figures
-- Utility of a cut: sum of (n_leaves - 1) over occurrences (NCP numerator), occurrences,
-- generalized occurrences, published labels (the paper's partitions), |I| of the hierarchy.
SELECT sum(o.n * (h.n_leaves - 1)), sum(o.n),
       sum(CASE WHEN c.node_id <> c.leaf_id THEN o.n ELSE 0 END),
       count(DISTINCT c.node_id),
       (SELECT max(n_leaves) FROM hnode)
FROM cut AS c JOIN occ AS o ON o.item_id = c.item_id JOIN hnode AS h ON h.node_id = c.node_id

-- name: km_published_ids
-- New item ids of the published labels, in the order of the first original item they cover.
SELECT CAST(row_number() OVER (ORDER BY min(c.item_id)) AS BIGINT) AS item_id,
       c.node_id, h.label
FROM cut AS c JOIN hnode AS h ON h.node_id = c.node_id
GROUP BY c.node_id, h.label

-- name: km_publish_map
SELECT c.item_id, p.label FROM cut AS c JOIN pubid AS p ON p.node_id = c.node_id

-- name: km_publish_dict
SELECT item_id, label FROM pubid

-- name: km_publish_items
SELECT DISTINCT i.record_id, p.item_id
FROM items AS i
JOIN cut AS c ON c.item_id = i.item_id
JOIN pubid AS p ON p.node_id = c.node_id

-- name: km_unfaithful_rows
-- Verify: published rows that are not the generalization of an original row, and back.
SELECT count(*) FROM (
    (SELECT i.record_id, pd.item_id
     FROM items AS i
     JOIN map AS m ON m.item_id = i.item_id
     JOIN pdict AS pd ON pd.label = m.label
     EXCEPT
     SELECT record_id, item_id FROM published)
    UNION ALL
    (SELECT record_id, item_id FROM published
     EXCEPT
     SELECT i.record_id, pd.item_id
     FROM items AS i
     JOIN map AS m ON m.item_id = i.item_id
     JOIN pdict AS pd ON pd.label = m.label)
) AS diff

-- name: km_unmapped_items
SELECT count(*) FROM dict AS d WHERE d.item_id NOT IN (SELECT item_id FROM map)

-- Sampling ℓ-itemsets uniformly from the ORIGINAL data (Sec. IV). km_uniform(...) is replaced
-- by a portable hash of its arguments in [0, 1) (sampler.py): the same draws on every backend.

-- name: km_sample_weights
-- Records with at least ℓ items, weighted by C(|D_u|, ℓ) (their number of ℓ-itemsets), with
-- adjacent cumulative ranges [lo, hi): drawing a point uniformly picks a record by weight.
-- rnk orders them longest first (ties: the smaller id), the order of the first-holder rule
-- (sampler.py): a proposal is mostly drawn from a long record, with few records before it.
WITH w AS (
    SELECT record_id, count(*) AS len FROM items GROUP BY record_id HAVING count(*) >= :ell
), c AS (
    SELECT record_id, len, sum(weight) OVER (ORDER BY record_id ROWS UNBOUNDED PRECEDING) AS hi
    FROM (SELECT record_id, len, km_binomial(len) AS weight FROM w) AS x
)
SELECT record_id, coalesce(lag(hi) OVER (ORDER BY record_id), 0.0) AS lo, hi,
       CAST(row_number() OVER (ORDER BY len DESC, record_id) AS BIGINT) AS rnk
FROM c

-- name: km_sample_buckets
-- Each record listed under every bucket its range touches: turns the range lookup of a drawn
-- point into an equi-join (PostgreSQL would otherwise scan all records per point).
SELECT b.bucket, r.record_id, r.rnk, r.lo, r.hi
FROM recw AS r
CROSS JOIN LATERAL generate_series(CAST(floor(r.lo / :z * :nb) AS BIGINT),
                                   CAST(floor(r.hi / :z * :nb) AS BIGINT)) AS b(bucket)

-- name: km_sample_records
-- Proposals :first..:last of round :round: a record drawn with probability C(|D_u|, ℓ) / Z.
-- (A round may be drawn in parts, each numbering its proposals after the last part's.)
WITH p AS (
    SELECT g.pid, km_uniform('record', :seed, :ell, :round, g.pid) * :z AS t
    FROM generate_series(CAST(:first AS BIGINT), CAST(:last AS BIGINT)) AS g(pid)
)
SELECT p.pid, b.record_id, b.rnk
FROM p JOIN recb AS b
    ON b.bucket = CAST(floor(p.t / :z * :nb) AS BIGINT) AND b.lo <= p.t AND p.t < b.hi

-- name: km_sample_subsets
-- A uniform ℓ-subset of each drawn record: its ℓ items of smallest hash (the digest is computed
-- once per row, then decoded by km_hex).
SELECT pid, item_id FROM (
    SELECT pid, item_id,
           row_number() OVER (PARTITION BY pid ORDER BY km_hex(h), item_id) AS r
    FROM (
        SELECT p.pid, i.item_id,
               md5(concat_ws('|', 'subset', CAST(:seed AS TEXT), CAST(:ell AS TEXT),
                             CAST(:round AS TEXT), CAST(p.pid AS TEXT),
                             CAST(i.item_id AS TEXT))) AS h
        FROM props AS p JOIN items AS i ON i.record_id = p.record_id
    ) AS hashed
) AS ranked
WHERE r <= :ell

-- name: km_proposal_itemsets
-- (vid, node_id): each distinct proposed itemset once, as the support plans expect it.
SELECT DISTINCT pk.vid, s.item_id AS node_id FROM pkeys AS pk JOIN subs AS s ON s.pid = pk.pid

-- name: km_sample_records_as_nodes
-- D as (record_id, node_id), the shape the support plans read, each record named by its rnk
-- (km_sample_weights): the first-holder rule compares records by it. Records of fewer than ℓ
-- items are left out: they hold no ℓ-itemset.
SELECT w.rnk AS record_id, i.item_id AS node_id FROM items AS i JOIN recw AS w ON w.record_id = i.record_id

-- name: km_proposals_as_itemsets
-- Each proposal of subs(pid, item_id) as its own itemset (vid = pid), for the first-holder rule.
SELECT pid AS vid, item_id AS node_id FROM subs

-- name: km_proposal_bounds
-- bounds(vid, bound): each proposal of subs (vid = pid) bounded by its own record's rnk; its
-- first holder is looked for among the records before it.
SELECT r.pid AS vid, r.rnk AS bound FROM ranks AS r WHERE r.pid IN (SELECT pid FROM subs)

-- name: km_accepted_by_support
-- accepted(pid, supp): a proposed itemset C is drawn with probability supp(C) / Z; accepting it
-- with probability 1 / supp(C) leaves every itemset of Omega^ℓ equally likely (rejection
-- sampling), and draws are independent, as Theorem 1 requires. support(vid, supp): supp(C) of
-- each distinct proposal (groupsupport.py); every proposal is held by the record it was drawn
-- from, so each has a row.
SELECT pk.pid, s.supp FROM pkeys AS pk JOIN support AS s ON s.vid = pk.vid
WHERE km_uniform('accept', :seed, :ell, :round, pk.pid) * s.supp < 1

-- name: km_accepted_first_holders
-- accepted(pid, supp): the proposals drawn from their itemset's first holder, the holder of the
-- smallest rnk (sampler.py: each of the supp(C) holders proposes C with probability 1 / Z, so
-- C is accepted with probability 1 / Z, the same for every itemset). pbounds(vid, bound): each
-- proposal (vid = pid) and its record's rnk; holders(vid, holder): the smallest holder below
-- the largest bound of the proposals sharing the itemset's prefixes (groupsupport.py), which
-- is at least the proposal's own: it is accepted when that holder is not below its own record
-- (no row: no holder below any). supp is not counted.
SELECT b.vid AS pid, CAST(NULL AS BIGINT) AS supp
FROM pbounds AS b LEFT JOIN holders AS h ON h.vid = b.vid
WHERE h.holder IS NULL OR h.holder >= b.bound

-- name: km_sample_accept
-- The accepted proposals of a round (accepted: km_accepted_by_support or
-- km_accepted_first_holders) as samples, numbered after :offset in proposal order.
WITH numbered AS (
    SELECT pid, supp, CAST(:offset + row_number() OVER (ORDER BY pid) AS BIGINT) AS sid
    FROM accepted
)
SELECT k.sid, s.item_id, k.supp
FROM numbered AS k JOIN subs AS s ON s.pid = k.pid

-- name: km_kept_proposals
-- The proposals kept so far in a pool's round (kept) and a part's clean ones (subs).
SELECT pid, item_id FROM kept
UNION ALL
SELECT pid, item_id FROM subs

-- name: km_proposals_as_samples
-- One round's proposals in the samples' shape (sid = pid), before any support in D is known:
-- checked against the cut first, so that a part that fails counts supports only for its
-- violating proposals.
SELECT pid AS sid, item_id, CAST(NULL AS BIGINT) AS supp FROM subs

-- name: km_sample_accepted_count
-- How many proposals the rejection step keeps: every proposal of the round is then a sample
-- or rejected.
SELECT count(*) FROM accepted

-- name: km_proposals_among
-- The proposals of subs(pid, item_id) whose pid is among chosen(sid): the violating ones of a
-- part, whose acceptance alone decides whether the part holds a violating sample.
SELECT s.pid, s.item_id FROM subs AS s WHERE s.pid IN (SELECT sid FROM chosen)

-- name: km_accepted_proposals
-- The accepted proposals (of accepted(pid, supp), some of a part's) numbered as proposed
-- (sid = pid), so that the part's keys still name them.
SELECT k.pid AS sid, s.item_id, k.supp FROM accepted AS k JOIN subs AS s ON s.pid = k.pid

-- name: km_kept_ranks
-- The proposing records' ranks of the proposals kept so far (kept) and of a part's (props).
SELECT pid, rnk FROM kept
UNION ALL
SELECT pid, rnk FROM props

-- name: km_sample_keys_among
-- The keys (sid, vid, node_id) of the samples still in the pool.
SELECT k.sid, k.vid, k.node_id FROM keys AS k WHERE k.sid IN (SELECT sid FROM samples)

-- name: km_violations_among
-- The violating generalized itemsets (vid, node_id, n) with n re-counted over the keys left.
WITH n AS (SELECT vid, count(DISTINCT sid) AS n FROM keys GROUP BY vid)
SELECT v.vid, v.node_id, n.n FROM violations AS v JOIN n ON n.vid = v.vid

-- name: km_sample_union
-- The samples so far and the new ones up to number :limit: the first accepted in proposal
-- order (an order fixed before any support is known), so the kept ones stay uniform and
-- independent, and a round that accepts more than asked for is not checked in full.
SELECT sid, item_id, supp FROM samples
UNION ALL
SELECT sid, item_id, supp FROM fresh WHERE sid <= :limit

-- name: km_sample_nodes
-- (sid, node_id): the nodes of each sample's itemset generalized by the cut, each once (two
-- items under one node make it shorter); sampled.group_samples numbers identical ones.
SELECT DISTINCT s.sid, c.node_id FROM samples AS s JOIN cut AS c ON c.item_id = s.item_id

-- name: km_sample_widest
-- The most nodes a generalized sample holds (the width of its key, sampled.group_samples).
SELECT max(n) FROM (SELECT count(*) AS n FROM nodes GROUP BY sid) AS w

-- name: km_sample_groups
-- The generalized sample itemsets (vid, node_id, n), one node per row; n = samples behind it.
WITH sizes AS (
    SELECT vid, count(DISTINCT sid) AS n FROM keys GROUP BY vid
)
SELECT DISTINCT k.vid, k.node_id, z.n FROM keys AS k JOIN sizes AS z ON z.vid = k.vid

-- name: km_violating_samples
-- The samples whose generalized itemset is among the violations (the only ones a coarser cut
-- can still leave below k: supports never shrink when nodes merge).
SELECT s.sid, s.item_id, s.supp FROM samples AS s
WHERE s.sid IN (SELECT k.sid FROM keys AS k WHERE k.vid IN (SELECT vid FROM violations))

-- Supports of a set of itemsets, groups(vid, node_id, ...), in a record table g(record_id,
-- node_id): by postings here, by enumeration (an s-way self-join built with sqlglot) in
-- groupsupport.py, whichever reads fewer rows.

-- name: km_group_node_postings
-- gocc(node_id, n): how many records of g hold each node of the itemsets.
SELECT x.node_id, count(*) AS n
FROM (SELECT DISTINCT node_id FROM groups) AS x JOIN g ON g.node_id = x.node_id
GROUP BY x.node_id

-- name: km_itemset_support_none
-- support(vid, supp) of no itemset: the typed empty table (groupsupport.py, no itemset given).
SELECT CAST(NULL AS BIGINT) AS vid, CAST(NULL AS BIGINT) AS supp WHERE 1 = 0

-- name: km_itemset_first_none
-- holders(vid, holder) of no itemset: the typed empty table (groupsupport.py, with bounds).
SELECT CAST(NULL AS BIGINT) AS vid, CAST(NULL AS BIGINT) AS holder WHERE 1 = 0

-- name: km_group_sizes
-- The itemset sizes present among groups(vid, node_id, ...).
SELECT DISTINCT size FROM (SELECT vid, count(*) AS size FROM groups GROUP BY vid) AS s

-- name: km_group_records
-- g restricted to the nodes some itemset holds: no other node can complete an itemset.
SELECT g.record_id, g.node_id FROM g WHERE g.node_id IN (SELECT node_id FROM groups)

-- name: km_group_lengths
-- (record_id, len): how many of the nodes some itemset holds each record of g holds; the
-- enumeration's rows (km_length_histogram) and a bound on the rows a prefix level extended by
-- records makes (itemsets.prefix_record_bound).
SELECT g.record_id, count(*) AS len
FROM g WHERE g.node_id IN (SELECT node_id FROM groups)
GROUP BY g.record_id

-- name: km_length_histogram
-- How many records of km_group_lengths have each length.
SELECT len, count(*) AS records FROM lengths GROUP BY len

-- name: km_record_shapes
-- (record_id, shape_id): records of <R, D> (counts, km_generalized_counts) holding the same set
-- of nodes share a shape, numbered by the smallest of them (shapes.py: an itemset's support is
-- the records of the shapes holding it, so each shape's itemsets are enumerated once).
WITH keyed AS (
    SELECT record_id, string_agg(CAST(node_id AS TEXT), ',' ORDER BY node_id) AS skey
    FROM counts GROUP BY record_id
)
SELECT record_id, min(record_id) OVER (PARTITION BY skey) AS shape_id FROM keyed

-- name: km_shape_nodes
-- (record_id, node_id, w): the nodes of each shape (under the id of its smallest record), w =
-- the records holding exactly that set (members: km_record_shapes).
SELECT g.record_id, g.node_id, s.w
FROM counts AS g
JOIN (SELECT shape_id, count(*) AS w FROM members GROUP BY shape_id) AS s
    ON s.shape_id = g.record_id

-- name: km_group_record_lengths
-- How many restricted records have each length: Σ C(len, s) is the enumeration's row count.
SELECT len, count(*) AS records
FROM (SELECT record_id, count(*) AS len FROM gr GROUP BY record_id) AS x
GROUP BY len

-- name: km_group_violations
-- Generalized sample itemsets (groups: vid, node_id, n = samples) with support below :k in
-- <R, D>: support(vid, supp) as counted above, absent = 0.
SELECT gr.vid, gr.node_id, gr.n
FROM groups AS gr LEFT JOIN support AS s ON s.vid = gr.vid
WHERE coalesce(s.supp, 0) < :k

-- name: km_record_slice
-- The records of g whose id modulo :parts lies in [:lo, :hi): one slice of <R, D> for the
-- staged check (groupsupport.record_slices; the slices of 0..:parts partition the records).
SELECT record_id, node_id FROM g
WHERE record_id % :parts >= :lo AND record_id % :parts < :hi

-- name: km_group_support_sum
-- Supports counted over two disjoint slices of records, added (absent = 0).
SELECT vid, sum(supp) AS supp
FROM (SELECT vid, supp FROM a UNION ALL SELECT vid, supp FROM b) AS u
GROUP BY vid

-- name: km_published_cut
-- A published run as a cut: original item -> published item id (for checks by sampling).
SELECT m.item_id, pd.item_id AS node_id FROM map AS m JOIN pdict AS pd ON pd.label = m.label

-- name: km_published_generalized
SELECT record_id, item_id AS node_id FROM published

-- name: km_sample_unique_share
-- Samples whose itemset occurs in exactly one record of the original data, and all samples.
SELECT count(DISTINCT CASE WHEN supp = 1 THEN sid END), count(DISTINCT sid) FROM samples

-- name: km_sample_singletons
-- Size 1: Omega^1 is the set of items that occur, so :n uniform draws need no rejection.
WITH d AS (
    SELECT item_id, count(*) AS supp, row_number() OVER (ORDER BY item_id) AS r
    FROM items GROUP BY item_id
), p AS (
    SELECT g.pid,
           CAST(floor(km_uniform('single', :seed, :ell, :round, g.pid)
                      * (SELECT count(*) FROM d)) AS BIGINT) + 1 AS r
    FROM generate_series(CAST(1 AS BIGINT), CAST(:n AS BIGINT)) AS g(pid)
)
SELECT p.pid AS sid, d.item_id, d.supp FROM p JOIN d ON d.r = p.r

-- The MCMC sampler of Alg. 1 (mcmc.py): many independent chains advanced together.
--   recu(rn, record_id, len, qw): U of l.3 numbered 1..|U|, qw = 1 / C(|D_u|, ℓ);
--   props(pid, chain, step, record_id): the candidate of each chain and step (l.6);
--   subs(pid, item_id): its ℓ-subset (l.7, km_sample_subsets); moves(chain, step, pid, q, supp, u).

-- name: km_mcmc_records
-- Alg. 1 l.3: U, the records with at least ℓ items. qw is the record's term of q(x) in l.8
-- times ℓ!: prod_{i=1..ℓ} 1 / (|D_u| - ℓ + i) = 1 / (ℓ! C(|D_u|, ℓ)); the constant ℓ! cancels in
-- the ratio q(S) / q(C).
SELECT CAST(row_number() OVER (ORDER BY record_id) AS BIGINT) AS rn, record_id, len,
       1.0 / km_binomial(len) AS qw
FROM (SELECT record_id, count(*) AS len FROM items GROUP BY record_id HAVING count(*) >= :ell) AS w

-- name: km_mcmc_propose
-- Alg. 1 l.6 for chains 1..:chains and steps :first..:last: a record of U, uniformly (pid is
-- unique within a draw: step * :chains + chain).
WITH g AS (
    SELECT c.chain, s.step, km_uniform('mcmc', :seed, :ell, :round, c.chain, s.step) AS t
    FROM generate_series(CAST(1 AS BIGINT), CAST(:chains AS BIGINT)) AS c(chain)
    CROSS JOIN generate_series(CAST(:first AS BIGINT), CAST(:last AS BIGINT)) AS s(step)
)
SELECT g.step * :chains + g.chain AS pid, g.chain, g.step, r.record_id
FROM g JOIN recu AS r ON r.rn = CAST(floor(g.t * :nu) AS BIGINT) + 1

-- name: km_mcmc_largest
-- Theorem 3: :n draws of an ℓ-subset from the largest record of D (ties: smallest id).
SELECT g.pid, r.record_id
FROM (SELECT record_id FROM recu ORDER BY len DESC, record_id LIMIT 1) AS r
CROSS JOIN generate_series(CAST(1 AS BIGINT), CAST(:n AS BIGINT)) AS g(pid)

-- name: km_mcmc_score
-- supp(C) and q(C) of every candidate (Alg. 1 l.8): the records holding all ℓ items of C,
-- found from the postings of C's rarest item (the intersection of rows of the paper's table T).
WITH occ AS (
    SELECT s.item_id, count(*) AS n
    FROM (SELECT DISTINCT item_id FROM subs) AS s JOIN items AS i ON i.item_id = s.item_id
    GROUP BY s.item_id
), ranked AS (
    SELECT s.pid, s.item_id,
           row_number() OVER (PARTITION BY s.pid ORDER BY o.n, s.item_id) AS pos
    FROM subs AS s JOIN occ AS o ON o.item_id = s.item_id
), holders AS (
    SELECT r.pid, i.record_id
    FROM ranked AS r JOIN items AS i ON i.item_id = r.item_id
    WHERE r.pos = 1
), full_holders AS (
    SELECT h.pid, h.record_id
    FROM holders AS h
    JOIN subs AS s ON s.pid = h.pid
    JOIN items AS i ON i.record_id = h.record_id AND i.item_id = s.item_id
    GROUP BY h.pid, h.record_id
    HAVING count(*) = :ell
)
SELECT f.pid, count(*) AS supp, sum(u.qw) AS q
FROM full_holders AS f JOIN recu AS u ON u.record_id = f.record_id
GROUP BY f.pid

-- name: km_mcmc_moves
-- Candidates with their q, support and the uniform number of the acceptance test of l.8.
SELECT p.chain, p.step, p.pid, s.q, s.supp, km_uniform('mh', :seed, :ell, :round, p.pid) AS u
FROM props AS p JOIN scores AS s ON s.pid = p.pid

-- name: km_mcmc_start
-- Alg. 1 l.4: each chain starts at its candidate of step 0 (an itemset of Omega^ℓ).
SELECT chain, pid, q, supp FROM moves WHERE step = 0

-- name: km_mcmc_walk
-- Alg. 1 l.5-8 for steps :first..:last of every chain in one statement: S := C with
-- probability min(1, q(S) / q(C)), i.e. when u * q(C) < q(S). One row per chain and step.
WITH RECURSIVE walk(chain, step, pid, q, supp) AS (
    SELECT chain, CAST(:first - 1 AS BIGINT), pid, q, supp FROM cur
    UNION ALL
    SELECT m.chain, m.step,
           CASE WHEN m.u * m.q < w.q THEN m.pid ELSE w.pid END,
           CASE WHEN m.u * m.q < w.q THEN m.q ELSE w.q END,
           CASE WHEN m.u * m.q < w.q THEN m.supp ELSE w.supp END
    FROM walk AS w JOIN moves AS m ON m.chain = w.chain AND m.step = w.step + 1
)
SELECT chain, step, pid, q, supp FROM walk WHERE step >= :first

-- name: km_mcmc_history
-- X_t of the appendix (the support of each chain's state) for every step so far.
SELECT chain, step, supp FROM hist UNION ALL SELECT chain, step, supp FROM walk

-- name: km_mcmc_current
SELECT chain, pid, q, supp FROM walk WHERE step = :last

-- name: km_mcmc_pool
-- The items of every chain's current state, from this segment's candidates or kept from before
-- (UNION: in the first segment a chain still at its start is in both).
SELECT s.pid, s.item_id FROM subs AS s WHERE s.pid IN (SELECT pid FROM cur)
UNION
SELECT p.pid, p.item_id FROM pool AS p WHERE p.pid IN (SELECT pid FROM cur)

-- name: km_mcmc_geweke
-- Geweke (appendix) over the steps kept after burn-in: per chain d = (mean of X over steps
-- :a_start..:a_end, the first 10%) - (mean over steps >= :b_start, the last 50%). The chains
-- are independent, so the spread of d over chains gives the standard error of its mean
-- whatever the autocorrelation within a chain (controller: z = avg / sqrt(var / n)).
WITH per AS (
    SELECT chain,
           avg(CASE WHEN step <= :a_end THEN CAST(supp AS DOUBLE PRECISION) END)
           - avg(CASE WHEN step >= :b_start THEN CAST(supp AS DOUBLE PRECISION) END) AS d
    FROM hist WHERE step >= :a_start GROUP BY chain
)
SELECT avg(d), var_samp(d), count(*) FROM per

-- name: km_mcmc_samples
SELECT c.chain AS sid, p.item_id, c.supp FROM cur AS c JOIN pool AS p ON p.pid = c.pid

-- name: km_mcmc_unique_share
SELECT count(CASE WHEN supp = 1 THEN 1 END), count(*) FROM scores

-- Partitions constrained by an adjacency graph (graph.py, Acs et al. Sec. VI-C): every part is a
-- connected set of items and grows only by merging with an adjacent part. Logical tables:
--   lines(pos, line): the graph file; edge(a, b): adjacent data items, both directions;
--   cut(item_id, node_id, leaf_id): node_id = the smallest item id of the item's part;
--   coord(item_id, x, y): coordinates of the items (error 'geo').

-- name: km_graph_bad_lines
-- Lines that are not 'item<TAB>item' (or a lone 'item': a node without edges); first few.
SELECT pos, count(*) OVER () FROM lines
WHERE line IS NOT NULL AND trim(line) <> ''
  AND (trim(split_part(line, :tab, 1)) = '' OR split_part(line, :tab, 3) <> ''
       OR (strpos(line, :tab) > 0 AND trim(split_part(line, :tab, 2)) = ''))
ORDER BY pos LIMIT 5

-- name: km_graph_labels
SELECT trim(split_part(line, :tab, 1)) AS label FROM lines
WHERE line IS NOT NULL AND trim(line) <> ''
UNION
SELECT trim(split_part(line, :tab, 2)) FROM lines
WHERE line IS NOT NULL AND trim(line) <> '' AND strpos(line, :tab) > 0

-- name: km_graph_missing
-- Items of the data that no line of the graph names (first few, and how many).
SELECT d.label, count(*) OVER () FROM dict AS d
WHERE d.label NOT IN (SELECT label FROM glabels)
ORDER BY d.item_id LIMIT 5

-- name: km_graph_edges
-- Edges between items of the data, both directions; edges to other labels are left out.
WITH e AS (
    SELECT trim(split_part(line, :tab, 1)) AS x, trim(split_part(line, :tab, 2)) AS y
    FROM lines WHERE line IS NOT NULL AND strpos(line, :tab) > 0
), ids AS (
    SELECT a.item_id AS a, b.item_id AS b
    FROM e JOIN dict AS a ON a.label = e.x JOIN dict AS b ON b.label = e.y
    WHERE a.item_id <> b.item_id
)
SELECT a, b FROM ids UNION SELECT b, a FROM ids

-- name: km_graph_identity_cut
-- Alg. 2 l.4: every item is its own part.
SELECT item_id, item_id AS node_id, item_id AS leaf_id FROM dict

-- name: km_graph_pair_costs
-- Every pair of adjacent parts with at least one part in vnodes, and the error increase of
-- merging them (Sec. V): 'ncp' the increase of sum over occurrences of (part size - 1), i.e.
-- n1 * s2 + n2 * s1; 'share' the occurrences that become generalized. Integers: no float ties.
WITH reg AS (
    SELECT c.node_id, count(*) AS size, sum(o.n) AS n
    FROM cut AS c JOIN occ AS o ON o.item_id = c.item_id GROUP BY c.node_id
), pairs AS (
    SELECT DISTINCT least(ca.node_id, cb.node_id) AS r1, greatest(ca.node_id, cb.node_id) AS r2
    FROM edge AS e
    JOIN cut AS ca ON ca.item_id = e.a
    JOIN cut AS cb ON cb.item_id = e.b
    WHERE ca.node_id <> cb.node_id AND ca.node_id IN (SELECT node_id FROM vnodes)
)
SELECT p.r1, p.r2,
       CASE WHEN :error = 'share'
            THEN (CASE WHEN a.size = 1 THEN a.n ELSE 0 END)
                 + (CASE WHEN b.size = 1 THEN b.n ELSE 0 END)
            ELSE a.n * b.size + b.n * a.size END AS cost
FROM pairs AS p JOIN reg AS a ON a.node_id = p.r1 JOIN reg AS b ON b.node_id = p.r2

-- name: km_graph_pair_costs_geo
-- As km_graph_pair_costs for error 'geo' (Sec. VI-C): the increase of sum over occurrences of
-- the distance of the item to the centroid of its part (the mean of its items' coordinates).
WITH pairs AS (
    SELECT DISTINCT least(ca.node_id, cb.node_id) AS r1, greatest(ca.node_id, cb.node_id) AS r2
    FROM edge AS e
    JOIN cut AS ca ON ca.item_id = e.a
    JOIN cut AS cb ON cb.item_id = e.b
    WHERE ca.node_id <> cb.node_id AND ca.node_id IN (SELECT node_id FROM vnodes)
), members AS (
    SELECT p.r1, p.r2, c.item_id FROM pairs AS p JOIN cut AS c ON c.node_id = p.r1
    UNION ALL
    SELECT p.r1, p.r2, c.item_id FROM pairs AS p JOIN cut AS c ON c.node_id = p.r2
), centre AS (
    SELECT m.r1, m.r2, avg(x.x) AS cx, avg(x.y) AS cy
    FROM members AS m JOIN coord AS x ON x.item_id = m.item_id GROUP BY m.r1, m.r2
), own AS (
    SELECT c.node_id, avg(x.x) AS cx, avg(x.y) AS cy
    FROM cut AS c JOIN coord AS x ON x.item_id = c.item_id
    WHERE c.node_id IN (SELECT r1 FROM pairs UNION SELECT r2 FROM pairs)
    GROUP BY c.node_id
), now_err AS (
    SELECT c.node_id,
           sum(o.n * sqrt(power(x.x - w.cx, 2) + power(x.y - w.cy, 2))) AS e
    FROM cut AS c JOIN own AS w ON w.node_id = c.node_id
    JOIN coord AS x ON x.item_id = c.item_id JOIN occ AS o ON o.item_id = c.item_id
    GROUP BY c.node_id
), merged AS (
    SELECT m.r1, m.r2,
           sum(o.n * sqrt(power(x.x - k.cx, 2) + power(x.y - k.cy, 2))) AS e
    FROM members AS m JOIN centre AS k ON k.r1 = m.r1 AND k.r2 = m.r2
    JOIN coord AS x ON x.item_id = m.item_id JOIN occ AS o ON o.item_id = m.item_id
    GROUP BY m.r1, m.r2
)
SELECT g.r1, g.r2, g.e - a.e - b.e AS cost
FROM merged AS g JOIN now_err AS a ON a.node_id = g.r1 JOIN now_err AS b ON b.node_id = g.r2

-- name: km_graph_choose_merges
-- Alg. 2 l.13-14 for every violating itemset at once: each proposes the cheapest merge of one
-- of its parts with an adjacent part (ties: the smaller pair); of the distinct proposals the
-- cheapest share :batch is applied (at least one), as in km_choose_merges. An itemset's cheapest
-- merge is the cheapest of its parts' own cheapest merges, so each part's is found first, by
-- equality joins (joining costs on r1 = node OR r2 = node made PostgreSQL loop over every pair
-- for every (itemset, part) row: 1.5 s a round at 100,000 CDR-like users).
WITH ends AS (
    SELECT r1 AS node_id, r1, r2, cost FROM costs
    UNION ALL
    SELECT r2 AS node_id, r1, r2, cost FROM costs
), best AS (
    SELECT node_id, r1, r2, cost FROM (
        SELECT node_id, r1, r2, cost,
               row_number() OVER (PARTITION BY node_id ORDER BY cost, r1, r2) AS rn
        FROM ends
    ) AS per_part
    WHERE rn = 1
), proposals AS (
    SELECT DISTINCT r1, r2, cost FROM (
        SELECT b.r1, b.r2, b.cost,
               row_number() OVER (PARTITION BY v.vid ORDER BY b.cost, b.r1, b.r2) AS rn
        FROM vnodes AS v JOIN best AS b ON b.node_id = v.node_id
    ) AS ranked
    WHERE rn = 1
), ordered AS (
    SELECT r1, r2, row_number() OVER (ORDER BY cost, r1, r2) AS r, count(*) OVER () AS n
    FROM proposals
)
SELECT r1, r2 FROM ordered
WHERE r <= greatest(1, CAST(ceil(n * :batch) AS BIGINT))

-- name: km_graph_components
-- Chosen merges may chain (A-B, B-C): each part joins the smallest part id it is linked to.
WITH RECURSIVE e AS (
    SELECT r1 AS x, r2 AS y FROM chosen UNION SELECT r2, r1 FROM chosen
), reach(x, y) AS (
    SELECT x, y FROM e
    UNION
    SELECT r.x, e.y FROM reach AS r JOIN e ON e.x = r.y
)
SELECT x AS node_id, least(x, min(y)) AS new_id FROM reach GROUP BY x

-- name: km_graph_apply_merges
SELECT c.item_id, coalesce(m.new_id, c.node_id) AS node_id, c.leaf_id
FROM cut AS c LEFT JOIN comp AS m ON m.node_id = c.node_id

-- name: km_graph_figures
-- NCP numerator (sum over occurrences of part size - 1), occurrences, generalized occurrences,
-- published labels, number of items.
WITH reg AS (SELECT node_id, count(*) AS size FROM cut GROUP BY node_id)
SELECT sum(o.n * (r.size - 1)), sum(o.n), sum(CASE WHEN r.size > 1 THEN o.n ELSE 0 END),
       count(DISTINCT c.node_id), (SELECT count(*) FROM cut)
FROM cut AS c JOIN occ AS o ON o.item_id = c.item_id JOIN reg AS r ON r.node_id = c.node_id

-- name: km_graph_geo_error
-- The average geographic error of Sec. VI-C: sum over occurrences of the distance of the item
-- to the centroid of its part, over the number of occurrences (the caller divides).
WITH w AS (
    SELECT c.node_id, avg(x.x) AS cx, avg(x.y) AS cy
    FROM cut AS c JOIN coord AS x ON x.item_id = c.item_id GROUP BY c.node_id
)
SELECT sum(o.n * sqrt(power(x.x - w.cx, 2) + power(x.y - w.cy, 2)))
FROM cut AS c JOIN w ON w.node_id = c.node_id
JOIN coord AS x ON x.item_id = c.item_id JOIN occ AS o ON o.item_id = c.item_id

-- name: km_graph_published_ids
-- A part of one item keeps the item's label; a merged part is 'region:<label of its smallest
-- item>+<number of other items>' (stable: the same part gives the same label on every backend).
WITH reg AS (SELECT node_id, count(*) AS size FROM cut GROUP BY node_id)
SELECT CAST(row_number() OVER (ORDER BY r.node_id) AS BIGINT) AS item_id, r.node_id,
       CASE WHEN r.size = 1 THEN d.label
            ELSE concat('region:', d.label, '+', CAST(r.size - 1 AS TEXT)) END AS label
FROM reg AS r JOIN dict AS d ON d.item_id = r.node_id

-- name: km_coord_values
-- Coordinates file 'item<TAB>x<TAB>y' (after load_lines): one row per line, as text.
SELECT pos, trim(split_part(line, :tab, 1)) AS label, trim(split_part(line, :tab, 2)) AS x,
       trim(split_part(line, :tab, 3)) AS y, split_part(line, :tab, 4) AS rest
FROM lines WHERE line IS NOT NULL AND trim(line) <> ''

-- name: km_coord_missing
SELECT d.label, count(*) OVER () FROM dict AS d
WHERE d.label NOT IN (SELECT label FROM cvalues)
ORDER BY d.item_id LIMIT 5

-- name: km_coord_table
SELECT d.item_id, CAST(min(v.x) AS DOUBLE PRECISION) AS x, CAST(min(v.y) AS DOUBLE PRECISION) AS y
FROM dict AS d JOIN cvalues AS v ON v.label = d.label
GROUP BY d.item_id

-- name: km_coord_bad_lines
-- Lines that are not 'item<TAB>x<TAB>y' with decimal numbers x and y, or repeat an item.
SELECT pos, count(*) OVER () FROM cvalues
WHERE label = '' OR rest <> ''
   OR label IN (SELECT label FROM cvalues GROUP BY label HAVING count(*) > 1)
   OR NOT x ~ '^[-+]?[0-9]+([.][0-9]*)?([eE][-+]?[0-9]+)?$'
   OR NOT y ~ '^[-+]?[0-9]+([.][0-9]*)?([eE][-+]?[0-9]+)?$'
ORDER BY pos LIMIT 5

-- name: km_sample_work
-- Before drawing ℓ-itemsets: a drawn record costs one hashed row per item (km_sample_subsets),
-- and records are drawn in proportion to C(|D_u|, ℓ). Returns the weighted mean length of a
-- drawn record, and the longest record (id, length), which dominates when it is very long.
WITH w AS (
    SELECT record_id, count(*) AS len FROM items GROUP BY record_id HAVING count(*) >= :ell
), x AS (
    SELECT record_id, len, km_binomial(len) AS weight FROM w
)
SELECT sum(weight * len) / sum(weight),
       (SELECT record_id FROM x ORDER BY len DESC, record_id LIMIT 1),
       max(len)
FROM x
