SELECT CAST(ROW_NUMBER() OVER (ORDER BY label COLLATE "C") AS INT) AS item_id, label FROM (SELECT DISTINCT label FROM "setanon"."tok") AS labels
