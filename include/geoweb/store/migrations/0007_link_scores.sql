-- Topical link priority (docs/priority.md): each frontier URL keeps the score of the link that added it, so a
-- shard fetches its URLs in descending score and a level's budget can mark its low-score URLs 'skipped'
-- (error_reason 'budget'); a run's resource keeps the URL whose fetch found it, so the recall curve can
-- follow every resource's path back to a seed.
ALTER TABLE frontier ADD COLUMN score double precision NOT NULL DEFAULT 0;
ALTER TABLE run_resources ADD COLUMN found_on text;
