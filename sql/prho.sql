-- Personalized rho-uncertainty (Nakagawa et al.). Canonical dialect: PostgreSQL.
-- Logical tables:
--   items(record_id, item_id), dict(item_id, label), records(record_id, position, ...): input;
--   tokens(record_id, label): a staged --constraint file (record_id = line number);
--   cons(record_id, item_id): E as given by the file; common(item_id): S (generated settings);
--   found(item_id): items of S+ found so far (fixed+);
--   cur(record_id, item_id, part): the current table D'; olen(record_id, len): lengths in D;
--   rules(rule_id, part, q1.., e, x1.., size, sx, sq, w): sensitive rules with conf > rho;
--   hits(s, record_id, item_id): the sampled adversaries (s, u, Q), one row per item of Q.

-- name: prho_cons_from_tokens
-- E_u of the record at position n = the labels of line n that are items of the data.
SELECT DISTINCT r.record_id, d.item_id
FROM tokens AS t
JOIN records AS r ON r.position = t.record_id
JOIN dict AS d ON d.label = t.label

-- name: prho_unknown_constraint_labels
-- Labels of the --constraint file that are not items of the data (first few, and how many):
-- no record has them, so no rule can reveal them.
SELECT label, count(*) OVER () AS n_unknown
FROM (SELECT DISTINCT t.label FROM tokens AS t
      WHERE NOT EXISTS (SELECT 1 FROM dict AS d WHERE d.label = t.label)) AS u
ORDER BY label LIMIT 10

-- name: prho_no_items
SELECT item_id FROM dict WHERE 1 = 0

-- name: prho_no_pairs
SELECT record_id, item_id FROM items WHERE 1 = 0

-- name: prho_count_rows
SELECT count(*) FROM t

-- name: prho_max_position
SELECT coalesce(max(position), 0) FROM records

-- name: prho_found_union
SELECT item_id FROM found UNION SELECT item_id FROM common

-- name: prho_lengths
-- |D_u| of every record of D with items: who can be the target of an adversary of l items.
SELECT record_id, count(*) AS len FROM items GROUP BY record_id

-- name: prho_rules_from_ids
-- The rules whose id is in ids (the relevant ones).
SELECT r.* FROM rules AS r WHERE EXISTS (SELECT 1 FROM ids AS i WHERE i.rule_id = r.rule_id)

-- name: prho_unsafe_samples
-- Sampled adversaries (s) for which D' is not safe.
SELECT count(DISTINCT s) FROM unsafe
