INSERT INTO changelog_out SELECT page, user_id FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY user_id ORDER BY ts DESC) AS rn FROM clicks) WHERE rn = 1;
