"""Public names that have one home: the online policy registry, the renamed simulator results, the
backend / solver / method choices read by every entry point and the CLI."""

import warnings

import pytest

import hetplace.balance as balance
import hetplace.online as online
from hetplace import InvalidOptionError
from hetplace.online.policies_ours import OUR_POLICIES
from hetplace.online.policies_peers import PEER_POLICIES


def test_online_policies_is_a_read_only_mapping_of_every_policy_name_to_its_class():
    assert list(online.POLICIES) == [*OUR_POLICIES, *PEER_POLICIES]
    assert online.policy_names() == tuple(online.POLICIES)
    for name, cls in online.POLICIES.items():
        assert type(online.make_policy(name)) is cls
    with pytest.raises(TypeError):
        online.POLICIES["mine"] = object  # read-only


def test_simulate_names_the_registry_that_exists():
    from hetplace.online import gavel_trace, simulate

    with pytest.raises(InvalidOptionError, match=r"policy name \(hetplace\.online\.POLICIES\) or an object"):
        simulate(gavel_trace(2, 4.8, seed=0), {"v100": 2}, policy=3)


@pytest.mark.parametrize("module,old,new", [
    (online, "SimulationResult", "OnlineResult"),
    (balance, "SimulationResult", "BalanceResult"),
    (__import__("hetplace.online.result", fromlist=["x"]), "SimulationResult", "OnlineResult"),
])
def test_the_old_result_names_are_deprecated_aliases(module, old, new):
    assert old not in module.__all__ and new in module.__all__
    with pytest.warns(DeprecationWarning, match=rf"{module.__name__}\.{old} is deprecated; use .*\.{new}"):
        assert getattr(module, old) is getattr(module, new)
    assert online.OnlineResult is not balance.BalanceResult
    with pytest.raises(AttributeError):
        module.NoSuchName  # noqa: B018


def test_result_names_do_not_warn_when_imported_by_their_new_names():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for module in (online, balance):
            exec(f"from {module.__name__} import *", {})


def test_backend_solver_and_method_choices_have_one_home():
    from hetplace import bench, categories, cli, exact, matching, smp
    from hetplace._core import _registry
    from hetplace.api import METHODS

    assert smp.BACKENDS is matching.BACKENDS is _registry.BACKEND_CHOICES
    assert _registry.BACKEND_CHOICES == ("auto", *_registry.BACKENDS)
    assert exact.SOLVER_NAMES == ("scip", "cp-sat", "highs") and set(exact.SOLVER_NAMES) <= set(exact.SOLVERS)
    assert set(bench.ALL_METHODS) == set(METHODS) - {"keep-greedy"}
    parser = cli._build_parser()
    bench_parser = parser._subparsers._group_actions[0].choices["bench"]
    choices = {a.dest: a.choices for a in bench_parser._actions}
    assert tuple(choices["backend"]) == _registry.BACKEND_CHOICES
    assert tuple(choices["exact_solver"]) == exact.SOLVER_NAMES
    assert set(choices["methods"]) == set(METHODS)
    with pytest.raises(InvalidOptionError, match=r"choose one of 'auto', 'cython', 'numba', 'python'"):
        categories.enumerate_categories(4, 2, backend="fortran")
    assert categories.enumerate_categories(4, 2, backend="Python").tolist() == [[1, 3], [2, 2], [3, 1]]
