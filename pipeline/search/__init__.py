"""Search results for any dump: a local BM25 index over cleaned web pages
(:mod:`.index`, built by the ``search-index`` job in :mod:`.indexjob` and queried by the
``search`` job in :mod:`.searchjob`) and web search APIs (:mod:`.web`). Every route writes the
lines ingest reads as ``--search-results`` (:mod:`.results`)."""
