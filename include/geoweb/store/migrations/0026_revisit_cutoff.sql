-- A crawl run's revisit budget, drawn once for all its shards (HarvestParams.revisit_budget): when it was
-- drawn and the revisit key of the last known URL the run asks again (geoweb.crawl.pagestates.revisit_key);
-- NULL: every known URL is asked.
ALTER TABLE crawl_runs ADD COLUMN IF NOT EXISTS revisit_cutoff jsonb;
