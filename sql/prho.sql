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

-- name: prho_unsafe_pool
-- Unsafe sampled adversaries of a repair pool: all of them, and those of the check (s <= :n).
SELECT count(DISTINCT s), count(DISTINCT CASE WHEN s <= :n THEN s END) FROM unsafe

-- name: prho_choose
-- Alg. 1 l.12-13: the item d of Q + {e} of each unsafe rule and N = N_s(d) (eq. 7, cand.k).
-- 'paper' maximizes F = D'(d) log(D'(d)/D(d)) / N_s(d) (eq. 8; D(t) = share of t among all
-- occurrences); 'fewest' takes the smallest N_s, then e, then the largest F. Since
-- N_s(e) <= N_s(q) for every q (eq. 7, 1 - rho < 1), 'fewest' always takes e: taking e out of a
-- record answers every rule Q -> e the record supports, where taking q out answers only the
-- rules whose Q holds q (a record whose 5-itemsets are all unique has many Q per e).
-- Remaining ties of 'paper' go to e for the same reason (as in the rho model's choice,
-- setanon_sql/models/rho/choice.py). rnk orders the rules by the same key, then by d (as the
-- rho model does): rules sharing records are done in that order.
WITH tot AS (
    SELECT part, sum(n0) AS n0, sum(n) AS n FROM istat GROUP BY part
), shares AS (
    SELECT c.rule_id, c.d, c.k, c.ise,
           (CAST(i.n AS DOUBLE PRECISION) / t.n)
           * ln((CAST(i.n AS DOUBLE PRECISION) / t.n) / (CAST(i.n0 AS DOUBLE PRECISION) / t.n0))
           AS num
    FROM cand AS c
    JOIN istat AS i ON i.part = c.part AND i.item_id = c.d
    JOIN tot AS t ON t.part = c.part
), scored AS (
    SELECT rule_id, d, k, ise,
           CASE WHEN :choice = 'fewest' THEN 0.5 * ise - CAST(k AS DOUBLE PRECISION)
                ELSE num / k END AS h,  -- 'fewest': the smallest N_s, then e (k is whole)
           num / k AS f
    FROM shares
), best AS (
    SELECT rule_id, d, k, h, f,
           row_number() OVER (PARTITION BY rule_id ORDER BY h DESC, f DESC, k, ise DESC, d)
               AS choice
    FROM scored
)
SELECT b.d, b.k, b.h, CAST(row_number() OVER (ORDER BY b.h DESC, b.f DESC, b.k, b.d, b.rule_id)
                           AS BIGINT) AS rnk,
       r.*
FROM best AS b JOIN rules AS r ON r.rule_id = b.rule_id
WHERE b.choice = 1

-- name: prho_picks
-- Alg. 1 l.14: N = N_s(d) records of C(Q + {e}) lose d, for every rule (the rules blocked by a
-- rule of higher rank are taken out afterwards: blocked_rules_query). The records are taken in
-- random order (hkey) when :shared = 0; with :shared = 1 first those records that also support
-- other unsafe rules whose consequent is d (suppressing d there lowers their confidence too),
-- then at random.
WITH helps AS (
    SELECT m.record_id, c.e AS d, count(*) AS n
    FROM members AS m JOIN chosen AS c ON c.rule_id = m.rule_id
    WHERE :shared = 1
    GROUP BY m.record_id, c.e
), ranked AS (
    SELECT m.record_id, c.d AS item_id, c.rule_id, c.rnk, c.k,
           row_number() OVER (PARTITION BY m.rule_id
                              ORDER BY coalesce(h.n, 0) DESC, m.hkey, m.record_id) AS pick
    FROM members AS m
    JOIN chosen AS c ON c.rule_id = m.rule_id
    LEFT JOIN helps AS h ON h.record_id = m.record_id AND h.d = c.d
)
SELECT record_id, item_id, rule_id, rnk FROM ranked WHERE pick <= k
