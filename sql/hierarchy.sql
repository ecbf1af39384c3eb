-- Hierarchies: ARX-style rows 'leaf;level1;...;root' staged as lines(pos, line), checked and
-- stored as (node, parent, level, n_leaves). Canonical dialect: PostgreSQL.

-- name: hierarchy_edges
-- One row per (line, node): the node, its parent (the next different label on the line), the
-- line's leaf, and the node's depth below the root (root 0). Repeated labels that pad a line to
-- the tree height (ARX style, 'a;x;x;*') count once; empty lines are skipped.
CREATE TABLE edges AS
SELECT pos, node, parent, leaf,
       CAST(count(*) OVER (PARTITION BY pos ORDER BY i DESC) - 1 AS INT) AS depth
FROM (
    SELECT l.pos, g.i, trim(l.parts[g.i]) AS node, trim(l.parts[g.i + 1]) AS parent,
           trim(l.parts[1]) AS leaf
    FROM (SELECT pos, string_to_array(line, :separator) AS parts
          FROM lines WHERE line IS NOT NULL AND trim(line) <> '') AS l
    CROSS JOIN LATERAL generate_series(CAST(1 AS BIGINT),
                                       CAST(cardinality(l.parts) AS BIGINT)) AS g(i)
) AS raw
WHERE parent IS NULL OR node <> parent

-- name: hierarchy_first_empty_node
SELECT min(pos) FROM edges WHERE node IS NULL OR node = ''

-- name: hierarchy_roots
SELECT DISTINCT node FROM edges WHERE parent IS NULL ORDER BY node LIMIT 5

-- name: hierarchy_nodes_with_two_parents
SELECT node, min(parent), max(parent), min(pos) FROM edges
WHERE parent IS NOT NULL
GROUP BY node HAVING count(DISTINCT parent) > 1
ORDER BY min(pos) LIMIT 5

-- name: hierarchy_missing_labels
-- Labels of the data that are no leaf of the hierarchy (first few, and how many).
SELECT label, count(*) OVER () FROM labels
WHERE label NOT IN (SELECT leaf FROM edges)
ORDER BY label LIMIT 10

-- name: hierarchy_store
INSERT INTO hierarchy_nodes (hierarchy_id, node, parent, depth, n_leaves)
SELECT :hierarchy_id, node, min(parent), min(depth), count(DISTINCT leaf)
FROM edges GROUP BY node

-- name: hierarchy_shape
SELECT count(DISTINCT leaf), max(depth) FROM edges

-- name: hierarchy_nodes_of
SELECT node, parent, depth, n_leaves FROM hierarchy_nodes WHERE hierarchy_id = :hierarchy_id
