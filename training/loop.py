"""The training loop: a run is a function of a :class:`TrainConfig`, resumable bit for bit.

    config = make_config("t-dmca", "build/data", "runs/t-dmca", options={"preset": "tiny"},
                         overrides=["lr=5e-4", "model.dropout=0.2"])
    summary = train(config)                  # resumes from runs/t-dmca/checkpoints if any
    loaded = load("runs/t-dmca")             # model (eval mode), configs, tokenizer

This module holds the loop: the updates (gradient accumulation, clipping, the stop on a
non-finite loss), the batches of each epoch, when to log, evaluate, checkpoint and stop, and
the signals that stop a run cleanly. Around it: the configuration
(:mod:`~wikisum.training.config`), what is settled before the first update
(:mod:`~wikisum.training.runsetup`), the optimizer and its schedule
(:mod:`~wikisum.training.schedule`), the dev evaluation and early stopping
(:mod:`~wikisum.training.deveval`), checkpointing and resuming (:mod:`~wikisum.training.resume`;
the files: :mod:`~wikisum.training.checkpoint`), what the run prints
(:mod:`~wikisum.training.console`), processes (:mod:`~wikisum.training.runtime`) and the log
(:mod:`~wikisum.training.runlog`).

Optimisation: Adam (AdamW, i.e. decoupled decay, when ``weight_decay > 0``) with the learning rate
of :func:`~wikisum.training.schedule.learning_rate`, gradient clipping by global norm, and gradient
accumulation over ``accumulate`` batches. The loss of an update is the mean over its target
tokens: each batch's loss is weighted by its share of the update's target tokens.

Several GPUs (or CPU processes): ``torchrun --nproc_per_node N -m wikisum.workflows.cli train ...``
runs DistributedDataParallel (NCCL on GPUs, gloo on CPUs); rank r reads every N-th example from
the r-th on, and only rank 0 writes checkpoints and logs.
"""

from __future__ import annotations

import contextlib
import json
import math
import signal
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist

from wikisum import models
from wikisum.core.files import write_text_atomically
from wikisum.core.loader import Dataset
from wikisum.training import batching, console, deveval
from wikisum.training.checkpoint import BEST, Loaded, latest_readable, load
from wikisum.training.config import ConfigError, TrainConfig, make_config
from wikisum.training.console import summary_line
from wikisum.training.deveval import EarlyStopping
from wikisum.training.resume import Resumable
from wikisum.training.runlog import RunLog, check_log_targets
from wikisum.training.runsetup import (
    SPECIAL_ID_FIELDS,
    build_model,
    exemplars_needed,
    find_vocab,
    sanity_warnings,
    settle_auto,
)
from wikisum.training.runtime import Processes, processes
from wikisum.training.schedule import build_optimizer, learning_rate, scheduler

ESTIMATE_AFTER = 5  # updates of an invocation timed before the run's duration is estimated


class NonFiniteLoss(RuntimeError):
    """The loss (or the gradient norm) became NaN or infinite; training stopped."""


def train(config: TrainConfig, factory=models) -> dict:
    """Train (or resume) the run ``config.out``; returns the summary also written to
    RUN/summary.json.

    Args:
        config: the run's settings.
        factory: what builds models: anything with the registry's ``build(name, preset,
            **overrides)`` and ``from_config(name, config_dict)`` (default: :mod:`wikisum.models`).

    Raises:
        NonFiniteLoss: the loss or gradient norm became NaN or infinite.
        ConfigError: settings that cannot run, or differ from the checkpoint being resumed.
        models.batching.CorruptShardError: a shard cannot be read (the message names it).
    """
    check_log_targets(config.log_to)
    procs = processes(config.device)
    try:
        trainer = _Trainer(config, factory, procs)
        with _stop_on_signals(trainer):
            return trainer.run()
    finally:
        if procs.started_group:
            dist.destroy_process_group()


@contextlib.contextmanager
def _stop_on_signals(trainer: _Trainer):
    """SIGTERM (a scheduler preempting the job, `kill`) and SIGINT (Ctrl-C) finish the update in
    progress, write a checkpoint and stop: the run resumes from there. A second signal stops at
    once, as before. Only where signals can be handled (the main thread)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {}

    def handler(signum, frame):
        if trainer.stop_signal is not None:  # asked twice: give up at once
            signal.signal(signum, previous[signum])
            signal.raise_signal(signum)
            return
        trainer.stop_signal = signal.Signals(signum).name
        print(f"{trainer.stop_signal}: checkpointing after this update, then stopping "
              "(again to stop at once)", file=sys.stderr, flush=True)

    for signum in (signal.SIGTERM, signal.SIGINT):
        previous[signum] = signal.signal(signum, handler)
    try:
        yield
    finally:
        for signum, old in previous.items():
            signal.signal(signum, old)


class _Trainer(Resumable):
    """One run's state and its loop; set-up and checkpoints are :class:`Resumable`'s."""

    def __init__(self, config: TrainConfig, factory, procs: Processes):
        self.config = config
        self.procs = procs
        self.run_dir = Path(config.out)
        self.dataset = Dataset(config.data)
        self.dataset.check_view(config.target, config.inputs)
        self.eos_id = int(self.dataset.special_ids["eos"])
        self.exemplars = exemplars_needed(factory, config.model)
        self.name = config.model
        # The order of these steps is the order of what they draw from the RNGs: keep it, or a
        # resumed run stops being bit-identical to an uninterrupted one.
        ckpt, state = latest_readable(config.out)
        self.auto = settle_auto(config, state, procs.device.type)
        config = self.config = self.auto.config
        self.vocab_sha256 = self._check_vocab(state, ckpt)
        self.model = self._load_or_init(state, ckpt, factory).to(procs.device)
        if hasattr(self.model, "encode_example"):  # a model with its own tokenizer (hf)
            self.model.check_lengths(config.max_input_tokens)
            self.eos_id = int(self.model.eos_id)
        self.optimizer, self.scheduler = build_optimizer(self.model, config)
        position, skipped_before = self._restore(state, ckpt)
        self.stream = batching.BatchStream(self._epoch, position, skipped_before)
        self.net, self.autocast = self._distribute()
        self.saved_step = self.step if state is not None else None
        self.saved_at = time.monotonic()
        self.stop_signal: str | None = None  # set by the SIGTERM / SIGINT handler
        self.warned_small_data = False
        self.stopped: str | None = None
        self.last_ckpt = ckpt
        self.early = EarlyStopping.from_state(state)
        if config.patience and not self.dataset.files("dev"):
            raise ConfigError(f"patience={config.patience} stops on the dev perplexity, and "
                              f"{config.data} has no dev split")
        if procs.main:
            self._prepare_run_dir(state is None)
        self.log = RunLog(self.run_dir, self.resumed_from, procs.main, config.log_to,
                          settings=asdict(config))

    def _distribute(self):
        """The module that training steps call (DDP across processes, compiled with
        ``compile``) and the autocast context (bf16 on CUDA). ``self.model`` stays the plain
        module: evaluation runs it and checkpoints hold its state_dict."""
        procs = self.procs
        net = self.model
        if procs.world > 1:
            ids = [procs.device.index] if procs.device.type == "cuda" else None
            net = torch.nn.parallel.DistributedDataParallel(self.model, device_ids=ids)
        if self.config.compile:
            net = torch.compile(net)
        autocast = torch.autocast(procs.device.type, dtype=torch.bfloat16,
                                  enabled=procs.device.type == "cuda" and self.config.bf16)
        return net, autocast

    # -- data ------------------------------------------------------------------------------

    def _read(self, split: str) -> Iterator:
        c = self.config
        return batching.read_examples(self.dataset, split, c.extractor, c.corpus,
                                      c.max_input_tokens, self.exemplars, target=c.target,
                                      inputs=c.inputs,
                                      encode=getattr(self.model, "encode_example", None))

    def _epoch(self, epoch: int, counts: Counter) -> Iterator[list[batching.Pair]]:
        c = self.config
        limit, policy = c.target_limit()
        return batching.epoch_batches(
            lambda: self._read("train"), eos_id=self.eos_id, max_tokens=c.batch_tokens,
            seed=c.seed, epoch=epoch, counts=counts, rank=self.procs.rank,
            world=self.procs.world, shuffle_buffer=c.shuffle_buffer, pool=c.sort_pool,
            max_target_tokens=limit, long_targets=policy)

    def _next_batch(self) -> list[batching.Pair]:
        """The next batch; at the end of the epoch (on any rank) every rank starts the next."""
        for _ in range(2):
            batch = self.stream.next()
            have = self.procs.all_sum([0.0 if batch is None else 1.0])[0]
            if have == self.procs.world:
                return batch
            self._end_epoch()
        raise ValueError(f"no training batch in the train split of {self.config.data} "
                         f"(skipped: {dict(self.stream.skipped)}; batch_tokens "
                         f"{self.config.batch_tokens})")

    def _end_epoch(self) -> None:
        s = self.stream
        c = self.config
        if self.procs.main and not self.warned_small_data and s.batches <= c.accumulate:
            self.warned_small_data = True
            print(f"warning: the whole train split ({s.examples:,} examples on this process) "
                  f"fits in {s.batches} batch(es) of batch_tokens={c.batch_tokens:,}: every "
                  f"update (accumulate={c.accumulate}) sees all of it; a smaller --batch-tokens "
                  "gives more updates per pass over the data", file=sys.stderr, flush=True)
        self.log.write({"step": self.step, "event": "epoch_end", "epoch": s.epoch,
                        "batches": s.batches, "examples": s.examples,
                        "skipped": {k: s.counts[k] for k in batching.SKIPS if s.counts[k]},
                        "cut": s.counts[batching.CUT_TARGET]})
        s.next_epoch()

    # -- steps -----------------------------------------------------------------------------

    def _update(self) -> tuple[float, float, float, float, float]:
        """One optimizer update over ``accumulate`` batches: (loss, nll per target token,
        gradient norm, tokens read, learning rate of the update)."""
        c = self.config
        micro = [batching.to_batch(self._next_batch()) for _ in range(c.accumulate)]
        target_tokens = sum(int(b.target_lengths.sum()) for b in micro)
        self.net.train()
        self.optimizer.zero_grad(set_to_none=True)
        loss_sum = nll_sum = 0.0
        tokens = 0
        for i, batch in enumerate(micro):
            batch = batch.to(self.procs.device)
            sync = self.procs.world == 1 or i == len(micro) - 1
            with (contextlib.nullcontext() if sync else self.net.no_sync()):
                with self.autocast:
                    out = self.net(batch)
                weight = float(batch.target_lengths.sum()) / target_tokens
                (out.loss * weight).backward()
            loss_sum += float(out.loss.detach()) * weight
            nll_sum += float(out.target_nll.detach())
            tokens += int(batch.source_lengths.sum() + batch.target_lengths.sum())
        max_norm = c.clip_norm if c.clip_norm > 0 else float("inf")
        norm = float(torch.nn.utils.clip_grad_norm_(self.model.parameters(), max_norm))
        # Summed over ranks: one rank's NaN or inf makes every rank stop at the same step.
        loss, nll, n_target, norm_sum, tokens = self.procs.all_sum(
            [loss_sum, nll_sum, target_tokens, norm, tokens])
        if not (math.isfinite(loss) and math.isfinite(norm_sum)):
            what = f"loss {loss / self.procs.world}" if not math.isfinite(loss) else \
                f"gradient norm {norm_sum / self.procs.world}"
            where = f"the last checkpoint is {self.last_ckpt}" if self.last_ckpt else \
                "no checkpoint was written"
            self.log.write({"step": self.step + 1, "event": "non_finite", "detail": what})
            raise NonFiniteLoss(f"{what} at step {self.step + 1} (epoch {self.stream.epoch}, "
                                f"examples {[b.ids for b in micro]}): training stopped; {where}")
        lr = self.optimizer.param_groups[0]["lr"]
        self.optimizer.step()
        self.scheduler.step()
        self.step += 1
        return loss / self.procs.world, nll / n_target, norm, tokens, lr

    def _dev_perplexity(self) -> dict | None:
        """:func:`~wikisum.training.deveval.dev_perplexity` of the dev split, if it has one."""
        if not self.dataset.files("dev"):
            return None
        return deveval.dev_perplexity(self.model, self._read("dev"), self.config, self.procs,
                                      eos_id=self.eos_id, autocast=self.autocast, step=self.step)

    # -- what the run will cost, and where it is -------------------------------------------

    def _announce(self, parameters: int, end: int) -> None:
        """The start line (what trains, where, for how long), the data line and warnings about
        settings that make little sense for the run; rank 0 only."""
        if not self.procs.main:
            return
        from wikisum.core.progress import say

        resumed = self.resumed_from is not None
        say(console.start_line(self.config, self.auto.chosen, name=self.name,
                               parameters=parameters, device=self.procs.device,
                               world=self.procs.world, step=self.step, resumed=resumed, end=end),
            file=sys.stderr)
        say(console.data_line(self.config, self.run_dir), file=sys.stderr)
        for warning in sanity_warnings(self.config, not resumed):
            print(f"warning: {warning}", file=sys.stderr, flush=True)

    def _progress(self, end: int):
        if not self.procs.main:
            return None
        from wikisum.core.progress import Progress

        return Progress(f"train {self.name}", total=end, unit="steps", initial=self.step)

    def run(self) -> dict:
        try:
            return self._run()
        finally:
            self.log.close()

    def _run(self) -> dict:
        c = self.config
        start_step, started = self.step, time.perf_counter()
        parameters = sum(p.numel() for p in self.model.parameters())
        self.log.write({"step": self.step, "event": "resume" if self.resumed_from is not None
                        else "start", "model": self.name, "preset": c.preset,
                        "warmup_steps": c.warmup_steps, "parameters": parameters,
                        "world": self.procs.world, "device": str(self.procs.device)})
        end = c.steps if c.stop_after is None else min(c.steps, self.step + c.stop_after)
        if self.early.exhausted(c.patience):  # resuming a run that stopped early
            end = self.step
            self.stopped = "early_stopping"
            if self.procs.main:
                print(f"train: the run stopped early at step {self.step:,} (no better dev "
                      f"perplexity in {self.early.bad} evaluations, patience={c.patience}); "
                      "raise patience to train on", file=sys.stderr, flush=True)
        self._announce(parameters, end)
        progress = self._progress(end)
        last: dict[str, Any] = {"loss": None, "dev": None}
        window_tokens, window_start = 0.0, time.perf_counter()
        run_tokens, update_seconds = 0.0, 0.0
        while self.step < end:
            update_started = time.perf_counter()
            loss, nll, norm, tokens, lr = self._update()
            update_seconds += time.perf_counter() - update_started
            self.tokens_seen += int(tokens)
            window_tokens += tokens
            run_tokens += tokens
            last["loss"] = loss
            if progress is not None:
                progress.update(1, f"loss {loss:.4f}, lr {lr:.2e}, "
                                   f"{run_tokens / max(update_seconds, 1e-9):,.0f} tok/s")
                if self.step - start_step == ESTIMATE_AFTER and self.step < end:
                    progress.note(console.estimate_line(update_seconds, run_tokens,
                                                        self.step - start_step, end - self.step))
            if self.step % c.log_every == 0 or self.step == c.steps:
                elapsed = max(time.perf_counter() - window_start, 1e-9)
                rate = window_tokens / elapsed
                self.log.write(
                    {"step": self.step, "epoch": self.stream.epoch, "loss": loss, "nll": nll,
                     "lr": lr, "grad_norm": norm, "tokens_per_s": rate})
                window_tokens, window_start = 0.0, time.perf_counter()
            if c.eval_every and (self.step % c.eval_every == 0 or self.step == c.steps):
                dev = self._dev_perplexity()
                if dev is not None:
                    last["dev"] = dev
                    self.log.write(dev)
                    if progress is not None:
                        progress.note(f"dev {self.name} step {self.step} "
                                      f"ppl {dev['dev_ppl']:.3f}")
                    if c.patience and self.early.observe(self.step, dev["dev_ppl"]):
                        self._save_best()
            time_due = bool(c.checkpoint_minutes) and (
                time.monotonic() - self.saved_at >= 60 * c.checkpoint_minutes)
            due, stop = time_due, self.stop_signal is not None
            if self.procs.world > 1:  # every rank must agree (a checkpoint gathers from all)
                due, stop = self.procs.all_sum([float(due), float(stop)])
            if self.step % c.checkpoint_every == 0 or due:
                self._save()
            if stop:
                self.stopped = self.stop_signal or "signal on another rank"
                break
            if self.early.exhausted(c.patience):
                self.stopped = "early_stopping"
                self.log.write({"step": self.step, "event": "early_stop", "patience": c.patience,
                                "evaluations_without_improvement": self.early.bad,
                                "best_step": self.early.best_step,
                                "best_dev_ppl": self.early.best_ppl})
                if progress is not None:
                    progress.note(f"early stop at step {self.step}: no better dev perplexity in "
                                  f"{self.early.bad} evaluations; the best, "
                                  f"{self.early.best_ppl:.3f} at step {self.early.best_step}, "
                                  f"is in checkpoints/{BEST}")
                break
        if progress is not None:
            progress.close()
        if self.saved_step != self.step:
            self._save()
        skipped = self.procs.all_sum([float(v) for v in self._skip_values()])
        summary = {
            "run": str(self.run_dir), "model": self.name, "rank": self.procs.rank,
            "world": self.procs.world, "step": self.step,
            "steps": c.steps, "complete": self.step >= c.steps,
            "resumed_from": self.resumed_from,
            "position": asdict(self.stream.position),
            "loss": last["loss"], "dev": last["dev"], "tokens_seen": self.tokens_seen,
            "skipped": dict(zip(self._skip_keys(), map(int, skipped), strict=True)),
            "checkpoint": str(self.last_ckpt) if self.last_ckpt else None,
            "seconds": time.perf_counter() - started,
            "stopped_by": self.stopped,
        }
        if c.patience:
            best = self.run_dir / "checkpoints" / BEST
            summary["early_stopping"] = {
                "patience": c.patience, "stopped": self.stopped == "early_stopping",
                "best_step": self.early.best_step,
                "best_dev_ppl": None if self.early.best_step is None else self.early.best_ppl,
                "evaluations_without_improvement": self.early.bad,
                "best_checkpoint": str(best) if self.early.best_step is not None else None}
        if self.procs.main:
            self.log.write({"step": self.step, "event": "end", "skipped": summary["skipped"]})
            write_text_atomically(self.run_dir / "summary.json",
                                  json.dumps(summary, indent=1) + "\n")
        return summary

    @staticmethod
    def _skip_keys() -> list[str]:
        return list(batching.SKIPS)

    def _skip_values(self) -> list[int]:
        skipped = self.stream.skipped
        return [skipped.get(k, 0) for k in self._skip_keys()]


# With the names defined elsewhere that users, decoding and the command line import from here.
__all__ = ["SPECIAL_ID_FIELDS", "ConfigError", "Loaded", "NonFiniteLoss", "TrainConfig",
           "build_model", "exemplars_needed", "find_vocab", "learning_rate", "load", "make_config",
           "scheduler", "settle_auto", "summary_line", "train"]
