INSERT INTO changelog_out SELECT page, user_id FROM clicks ORDER BY user_id DESC LIMIT 5;
