INSERT INTO append_out SELECT t, order_id FROM orders CROSS JOIN UNNEST(tags) AS x (t);
