-- Export: published data back to files. Canonical dialect: PostgreSQL.
-- Logical tables: records(record_id, position, ...), items(record_id, item_id),
-- dict(item_id, label), map(item_id, label).

-- name: export_fimi_lines
-- One line per input record in input order; an emptied or deleted record is an empty line.
-- records: every record of the dataset; published: the records a run kept.
SELECT string_agg(d.label, ' ' ORDER BY i.item_id) AS line
FROM records AS r
LEFT JOIN published AS p ON p.record_id = r.record_id
LEFT JOIN items AS i ON i.record_id = p.record_id
LEFT JOIN dict AS d ON d.item_id = i.item_id
GROUP BY r.position
ORDER BY r.position

-- name: export_mapping
SELECT d.label AS item, m.label AS label
FROM map AS m JOIN dict AS d ON d.item_id = m.item_id
ORDER BY m.item_id
