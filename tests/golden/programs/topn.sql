INSERT INTO changelog_out SELECT page, user_id FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY page ORDER BY user_id DESC) AS rn FROM clicks) WHERE rn <= 3;
