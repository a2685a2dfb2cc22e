"""The JSON of the service's requests and replies (pydantic models; docs/service.md §3).

The models check the shape and the JSON types of every request and give the
OpenAPI schema its content; what a value means (a type the cluster has, a
batch of at least one, a quota within reach) is checked once, where it is
used: :func:`hetplace.io.cluster_from_dict` and :meth:`hetplace.Session.apply`.
"""

from typing import Annotated, Any, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, StrictStr

from ..session import SESSION_POLICIES

#: Longest job id, tenant, type or session name the service takes, in characters.
MAX_NAME = 256

Name = Annotated[StrictStr, Field(min_length=1, max_length=MAX_NAME)]
#: Largest integer job id in JSON: beyond it a double (JavaScript's number, JSON in many languages) loses digits.
MAX_INT_ID = 2**53 - 1

JobId = Union[Annotated[StrictInt, Field(ge=-MAX_INT_ID, le=MAX_INT_ID)], Annotated[StrictStr, Field(max_length=MAX_NAME)]]
Number = float  # the models are strict: a JSON number, integer or not; never a string
Bandwidth = Union[Number, Annotated[StrictStr, Field(max_length=64)]]
Quota = Union[StrictInt, Literal["inf"]]
Policy = Literal[SESSION_POLICIES]  # type: ignore[valid-type]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


# ------------------------------------------------------------------ the cluster
class ClusterTable(_Model):
    """The ``[cluster]`` table."""

    bandwidth: Optional[Bandwidth] = Field(
        None, description='Bytes/s between nodes (between racks with racks): a number, "25Gbit/s", "inf".')
    rack_bandwidth: Optional[Bandwidth] = Field(None, description="Bytes/s between the nodes of a rack.")


class TypeTable(_Model):
    """A ``[[types]]`` table: one GPU type."""

    name: Name
    count: Optional[StrictInt] = Field(None, description="Its GPUs (with nodes: may be left out).")
    speeds: Optional[list[Number]] = Field(None, description="Available fraction of each GPU, in (0, 1].")


class NodeTable(_Model):
    """A ``[[nodes]]`` table: ``count`` alike nodes."""

    type: Name
    gpus: StrictInt = Field(description="GPUs per node.")
    count: Optional[StrictInt] = Field(None, description="How many such nodes (default 1).")
    bandwidth: Optional[Bandwidth] = Field(None, description="Bytes/s inside each node.")
    rack: Optional[Union[Name, StrictInt]] = None


class RackTable(_Model):
    """A ``[[racks]]`` table."""

    name: Union[Name, StrictInt]
    bandwidth: Bandwidth


class QuotaTable(BaseModel):
    """A ``[[quotas]]`` table: ``{"tenant": name, <type name>: most GPUs of that type (or "inf")}``."""

    model_config = ConfigDict(extra="allow", strict=True, json_schema_extra={
        "additionalProperties": {"anyOf": [{"type": "integer", "minimum": 0}, {"const": "inf"}]}})

    tenant: Name


class Cluster(_Model):
    """A cluster: the cluster TOML document as JSON (docs/service.md §3.1)."""

    model_config = ConfigDict(extra="forbid", strict=True, json_schema_extra={"examples": [
        {"cluster": {"bandwidth": "25Gbit/s"},
         "nodes": [{"type": "v100", "gpus": 8, "bandwidth": "300GB/s", "rack": "a"}]},
        {"types": [{"name": "v100", "count": 8}, {"name": "k80", "count": 16}]},
    ]})

    cluster: Optional[ClusterTable] = None
    types: Optional[list[TypeTable]] = None
    nodes: Optional[list[NodeTable]] = None
    racks: Optional[list[RackTable]] = None
    quotas: Optional[list[QuotaTable]] = None


# ------------------------------------------------------------------ jobs and events
class JobFields(_Model):
    """A job: the keyword arguments of :meth:`hetplace.Session.submit`, with its id as ``job``."""

    job: JobId = Field(description="Its id: a string or an integer, new in the session.")
    throughput: dict[Name, Number] = Field(
        description="{type name: samples/s of ONE worker of that type}; a type not named cannot run it.")
    batch: StrictInt = Field(description="Global batch (samples per iteration), >= 1.")
    iterations: Number = Field(description="Iterations still to run, > 0.")
    grad_bytes: Number = 0.0
    min_workers: StrictInt = 1
    max_workers: Optional[StrictInt] = None
    types: Optional[list[Name]] = None
    tenant: Optional[Union[Name, StrictInt]] = None
    weight: Number = 1.0
    restart_time: Number = 0.0


class SubmitEvent(JobFields):
    type: Literal["submit"]


class ProgressEvent(_Model):
    type: Literal["progress"]
    job: JobId
    iterations_left: Number


class FinishEvent(_Model):
    type: Literal["finish"]
    job: JobId


class NodeDownEvent(_Model):
    type: Literal["node_down"]
    node: StrictInt = Field(description="A node index (the cluster's node order; without nodes, a GPU index).")


class NodeUpEvent(_Model):
    type: Literal["node_up"]
    node: StrictInt


Event = Annotated[Union[SubmitEvent, ProgressEvent, FinishEvent, NodeDownEvent, NodeUpEvent],
                  Field(discriminator="type")]


class EventBatch(_Model):
    """Events applied in order, all or none."""

    events: list[Event]
    expect_seq: Optional[StrictInt] = Field(
        None, description="Apply only if the session has accepted exactly this many batches (else 409): a "
                          "client that retries a batch whose reply it lost never applies it twice.")


# ------------------------------------------------------------------ requests
Options = Optional[dict[Name, Union[Number, StrictStr, StrictBool, None]]]
Quotas = Optional[dict[Name, dict[Name, Quota]]]


class SessionCreate(_Model):
    """A new session (the arguments of :class:`hetplace.Session`)."""

    cluster: Cluster
    policy: Policy = "smp"
    quotas: Quotas = Field(None, description="{tenant: {type name: most GPUs}}; default: the cluster's quotas.")
    seed: StrictInt = 0
    budget_s: Optional[Number] = Field(None, description="Seconds a decision may take (null: no limit).")
    options: Options = Field(None, description="Options of the policy's method, e.g. {\"samples\": 32}.")


class Decide(_Model):
    apply: StrictBool = Field(True, description="Make the decision the running state.")


class PlaceRequest(_Model):
    """A stateless placement: a cluster and jobs in, a placement out."""

    cluster: Cluster
    jobs: list[JobFields]
    method: Policy = "smp"
    quotas: Quotas = None
    seed: StrictInt = 0
    budget_s: Optional[Number] = None
    options: Options = None


# ------------------------------------------------------------------ replies
class ErrorBody(BaseModel):
    field: Optional[str] = Field(description="Path of the field at fault (e.g. events[2].batch), or null.")
    message: str = Field(description="What is wrong, the value received and the fix.")


class ErrorReply(BaseModel):
    error: ErrorBody


class Created(BaseModel):
    session: str


class Reason(BaseModel):
    code: Literal["infeasible", "quota", "capacity"]
    message: str
    data: dict[str, Any]


class Change(BaseModel):
    job: JobId
    action: Literal["start", "stop", "resize", "migrate"]
    before: list[int]
    after: list[int]


class DecisionReply(BaseModel):
    assignment: dict[str, list[int]] = Field(description="{job id: its workers} for every job that runs.")
    changes: list[Change]
    pending: dict[str, Reason] = Field(description="{job id: why it waits} for every other job.")
    status: Literal["ok", "budget"]
    wall_time: float = Field(description="Seconds the decision took in the server.")
    mean_jct: Optional[float]
    seed: int
    seq: int = Field(description="Event batches the session has accepted.")


class EventsReply(BaseModel):
    seq: int = Field(description="Event batches the session has accepted, this one included.")
    applied: int = Field(description="Events applied (all of the batch).")
    stopped: dict[str, list[JobId]] = Field(description="{event index: jobs its node_down stopped}.")


class SessionState(BaseModel):
    model_config = ConfigDict(extra="allow")

    session: str
    seq: int
    policy: str
    seed: int
    jobs: list[dict[str, Any]]
    running: list[list[Any]]
    down: list[int]


class PlaceReply(BaseModel):
    model_config = ConfigDict(extra="allow")

    placement: Optional[dict[str, Any]] = Field(
        description="The CLI's JSON placement (hetplace place --json), jobs named by id; null when none runs.")
    assignment: dict[str, list[int]]
    pending: dict[str, Reason]
    status: Literal["ok", "budget"]
    wall_time: float
