INSERT INTO page_views SELECT name, user_id FROM user_changes;
