"""The online policies by name: :data:`POLICIES`, :func:`policy_names`, :func:`make_policy`.

Ours (:mod:`hetplace.online.policies_ours`) come first, then the peers' re-implementations
(:mod:`hetplace.online.policies_peers`).  A module of its own so that the simulator and the sweep
take the registry from here, not from the package ``__init__`` that re-exports them.
"""

from types import MappingProxyType

from .._validation import check_choice
from ..errors import InvalidOptionError
from .policies_ours import OUR_POLICIES

try:
    from .policies_peers import PEER_POLICIES
except ImportError:  # the peers' module is optional in a partial checkout
    PEER_POLICIES = {}

__all__ = ["POLICIES", "policy_names", "make_policy", "policy_label", "oracle_policy_names"]

#: Policy classes by name (read-only): ours first, then the peers'.  ``POLICIES[name](**options)``
#: is what :func:`make_policy` builds.
POLICIES = MappingProxyType({**OUR_POLICIES, **PEER_POLICIES})


def policy_names():
    """Names :func:`make_policy` accepts (ours first, then the peers'): the keys of :data:`POLICIES`."""
    return tuple(POLICIES)


def make_policy(name, **options):
    """A policy object by name.

    Parameters
    ----------
    name : str
        ``"smp"``, ``"smp-rigid"`` (ours, :mod:`hetplace.online.policies_ours`)
        or a peer policy (``"fifo"``, ``"las"``, ``"las-aware"``, ``"ftf"``, ...
        in :mod:`hetplace.online.policies_peers`); :data:`POLICIES` maps them to
        their classes, :func:`policy_names` lists them.
    **options
        Passed to the policy's constructor.

    Raises
    ------
    InvalidOptionError
        Unknown name, or options the policy does not take.
    """
    key = check_choice("policy", name, tuple(POLICIES))
    try:
        return POLICIES[key](**options)
    except TypeError as exc:
        raise InvalidOptionError(f"policy {key!r} does not take these options ({exc}); options: {options!r}.") from None


def policy_label(name):
    """What a policy's table row says it is (its class's ``label``; the name when it has none).

    Oracle policies (they see job lengths) say so in their label, as do re-implementations
    that are simpler than the original and hetplace's own hybrids.
    """
    cls = POLICIES.get(name)
    return getattr(cls, "label", None) or name


def oracle_policy_names():
    """Names of the policies declared oracles (``oracle = True``: they see the jobs' true lengths)."""
    return tuple(n for n, cls in POLICIES.items() if getattr(cls, "oracle", False) is True)
