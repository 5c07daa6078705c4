"""Training (stage two): the run's settings (:mod:`~wikisum.training.config`), checkpoints,
the device and process runtime, the run log and run paths, batching, the loop
(:mod:`~wikisum.training.loop`: ``train(TrainConfig)``) and the data statistics a run records.
"""
