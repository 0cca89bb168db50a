INSERT INTO changelog_out SELECT page, MAX(user_id) FROM clicks GROUP BY page;
