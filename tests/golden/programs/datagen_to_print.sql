INSERT INTO printed SELECT label, id FROM generated WHERE score > 0;
