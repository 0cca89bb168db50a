INSERT INTO changelog_out SELECT CAST(views AS STRING), COUNT(*) FROM (SELECT page, COUNT(*) AS views FROM clicks GROUP BY page) GROUP BY views;
