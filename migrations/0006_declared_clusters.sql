-- Clusters declared as code (`wardn serve --clusters FILE`): the file that declares a cluster;
-- NULL for clusters registered through the API. Declared clusters change only in their file.
ALTER TABLE clusters ADD COLUMN declared_in TEXT;
