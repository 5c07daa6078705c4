"""Training (stage two): the run's settings (:mod:`~wikisum.training.config`), checkpoints,
the device and process runtime, the run log and run paths, batching, the loop
(:mod:`~wikisum.training.loop`: ``train(TrainConfig)``), what a run settles before its first
update (:mod:`~wikisum.training.runsetup`), the optimizer and its schedule
(:mod:`~wikisum.training.schedule`), dev perplexity and early stopping
(:mod:`~wikisum.training.deveval`), checkpointing and resuming
(:mod:`~wikisum.training.resume`), what a run prints (:mod:`~wikisum.training.console`) and the
data statistics a run records.
"""
