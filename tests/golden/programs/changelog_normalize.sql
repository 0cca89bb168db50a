INSERT INTO changelog_out SELECT currency, CAST(rate * 100 AS BIGINT) FROM rates;
