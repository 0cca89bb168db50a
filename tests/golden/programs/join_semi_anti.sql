INSERT INTO changelog_out SELECT page, user_id FROM clicks WHERE user_id IN (SELECT user_id FROM orders) AND NOT EXISTS (SELECT * FROM shipments s WHERE s.order_id = clicks.user_id);
