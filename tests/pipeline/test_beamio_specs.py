"""Beam's inspection of a DoFn for state and timers (``userstate.get_dofn_specs``), asked once a
DoFn instance by ``beamio``: the same answers as Beam's own, a caller's copy each time, and a
stateful DoFn still run with its state on the local runner."""

from __future__ import annotations

import gc

import apache_beam as beam
from apache_beam.coders import VarIntCoder
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.transforms import userstate
from apache_beam.transforms.timeutil import TimeDomain

from wikisum.pipeline import beamio

TOTAL = userstate.ReadModifyWriteStateSpec("total", VarIntCoder())
SEEN = userstate.BagStateSpec("seen", VarIntCoder())
EXPIRE = userstate.TimerSpec("expire", TimeDomain.WATERMARK)
# Beam reads state and timers from a method's defaults (made once, here)
TOTAL_PARAM, SEEN_PARAM = beam.DoFn.StateParam(TOTAL), beam.DoFn.StateParam(SEEN)
EXPIRE_PARAM = beam.DoFn.TimerParam(EXPIRE)


class Stateful(beam.DoFn):
    def process(self, element, total=TOTAL_PARAM, seen=SEEN_PARAM):
        _, value = element
        seen.add(value)
        total.write((total.read() or 0) + value)
        yield element[0], total.read()


class Timed(beam.DoFn):
    def process(self, element, timer=EXPIRE_PARAM):
        yield element

    @userstate.on_timer(EXPIRE)
    def expire(self):
        return []


class Plain(beam.DoFn):
    def process(self, element):
        yield element


class Slotted:  # no weak reference to it can be made (every DoFn can have one)
    __slots__ = ()


def counting(answer=None):
    """The function made of Beam's own (or of one giving `answer`), and the ids of the objects
    it asked (not the objects: it would keep them alive)."""
    calls = []

    def original(dofn):
        calls.append(id(dofn))
        return answer if answer is not None else userstate.get_dofn_specs.original(dofn)

    return beamio._specs_once(original), calls


def test_the_answers_are_beams_own():
    original = userstate.get_dofn_specs.original
    for dofn in (Stateful(), Timed(), Plain(), beam.transforms.core.CallableWrapperDoFn(len)):
        assert userstate.get_dofn_specs(dofn) == original(dofn)
        assert userstate.get_dofn_specs(dofn) == original(dofn)  # and from memory
    assert userstate.get_dofn_specs(Stateful()) == ({TOTAL, SEEN}, set())
    assert userstate.get_dofn_specs(Timed()) == (set(), {EXPIRE})
    assert userstate.get_dofn_specs(Plain()) == (set(), set())
    assert userstate.is_stateful_dofn(Stateful()) and userstate.is_stateful_dofn(Timed())
    assert not userstate.is_stateful_dofn(Plain())


def test_a_dofn_is_inspected_once_and_every_caller_gets_its_own_sets():
    specs, calls = counting()
    dofn = Stateful()
    first = specs(dofn)
    first[0].clear()
    first[1].add(EXPIRE)
    assert specs(dofn) == ({TOTAL, SEEN}, set())
    assert specs(dofn) is not specs(dofn)
    assert calls == [id(dofn)]
    specs(Stateful())  # another instance: asked itself
    assert len(calls) == 2


def test_an_object_without_weak_references_is_inspected_every_time():
    specs, calls = counting(answer=(set(), {EXPIRE}))
    slotted = Slotted()
    assert specs(slotted) == specs(slotted) == (set(), {EXPIRE})
    assert calls == [id(slotted)] * 2


def memory_of(specs) -> dict:
    return next(cell.cell_contents for cell in specs.__closure__
                if isinstance(cell.cell_contents, dict))


def test_a_dofn_is_remembered_by_identity_while_it_lives():
    """An answer is forgotten with its DoFn, and never given to another object at its id
    (CPython reuses a dead object's address; here a dead DoFn's entry is put at a live one's
    id, as reuse would leave it if it were not forgotten)."""
    specs, calls = counting()
    stateful, plain = Stateful(), Plain()
    assert specs(stateful) == ({TOTAL, SEEN}, set())
    memory = memory_of(specs)
    memory[id(plain)] = memory[id(stateful)]
    assert specs(plain) == (set(), set())
    assert calls == [id(stateful), id(plain)]
    address = id(stateful)
    del stateful
    gc.collect()
    assert address not in memory and id(plain) in memory


def test_installing_is_idempotent_and_keeps_beams_function():
    installed = userstate.get_dofn_specs
    beamio._install_specs_once()
    assert userstate.get_dofn_specs is installed
    assert not hasattr(installed.original, "original")


def test_a_stateful_dofn_runs_with_its_state_on_the_local_runner(tmp_path):
    options = PipelineOptions(["--direct_num_workers", "1", "--direct_running_mode",
                               "in_memory"])
    out = tmp_path / "totals.txt"
    with beam.Pipeline(runner=beamio.LocalRunner(), options=options) as p:
        totals = (p | beam.Create([("a", 1), ("a", 2), ("b", 5), ("a", 3)])
                  | beam.ParDo(Stateful())
                  | beam.CombinePerKey(max))
        _ = totals | beam.Map(lambda kv: f"{kv[0]} {kv[1]}") \
            | beam.io.WriteToText(str(out), shard_name_template="")
    assert sorted(out.read_text().split("\n")[:-1]) == ["a 6", "b 5"]
