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
