"""Policies and a table that make a simulation stall, for the simulator's termination tests.

Used by ``tests/test_online_hostile.py`` (in fresh interpreters) and by the fuzz
campaign's ``online`` entry point (``fuzz/campaign.py``).
"""

from hetplace.data import GavelTable, load_gavel

__all__ = ["Mover", "OntoK80", "no_k80_table"]


class Mover:
    """Gives jobs 1 GPU each, never on last round's type: after its first round, every round is a restart."""

    name = "mover"

    def decide(self, state):
        out, free = {}, dict(state.cluster)
        for js in state.jobs:
            last = next(iter(js.allocation), None)
            g = next((g for g in free if g != last and free[g] > 0), None)
            if g is not None:
                free[g] -= 1
                out[js.job.job_id] = {g: 1}
        return out


class OntoK80:
    """Puts every job on one k80, where the table it runs on has no figure for its model."""

    name = "onto-k80"

    def decide(self, state):
        return {js.job.job_id: {"k80": 1} for js in state.jobs[: state.cluster["k80"]]}


def no_k80_table(model):
    """The shipped table without any k80 figure of ``model`` (rate 0 there: the model does not fit)."""
    base = load_gavel()
    steps = {t: {m: v for m, v in e.items() if not (t == "k80" and m == model)} for t, e in base._steps.items()}
    multi = {t: {k: v for k, v in e.items() if not (t.startswith("k80") and k[0] == model)}
             for t, e in base._multi.items()}
    return GavelTable(base.path, steps, multi)
