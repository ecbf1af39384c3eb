SELECT CAST(ROW_NUMBER() OVER (ORDER BY CAST(label AS DECIMAL(38, 0))) AS INT) AS item_id, label FROM (SELECT DISTINCT label FROM "setanon"."tok") AS labels
