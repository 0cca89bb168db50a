INSERT INTO changelog_out SELECT c.page, o.order_id FROM clicks c FULL OUTER JOIN orders o ON c.user_id = o.user_id AND o.amount > 10;
