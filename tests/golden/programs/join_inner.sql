INSERT INTO append_out SELECT c.page, o.order_id FROM clicks c JOIN orders o ON c.user_id = o.user_id;
