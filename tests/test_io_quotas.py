"""Tenant quotas in the files and on the command line: ``[[quotas]]`` in the cluster TOML, the
``tenant`` column of the job CSV, the writers, and ``hetplace place`` (docs/bench.md, docs/model.md §1.7)."""
import io
import json
import math
from pathlib import Path

import numpy as np
import pytest

import hetplace as hp
from hetplace.cli import main
from hetplace.errors import InvalidOptionError, InvalidProblemError
from hetplace.io import (
    InputFileError, load_problem, read_cluster, read_jobs, tenant_arrays, write_cluster, write_jobs, write_placement,
)

from instances import tiny_random, tiny_topology

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
QUOTAS = EXAMPLES / "quotas.toml"
TENANT_JOBS = EXAMPLES / "jobs_tenants.csv"
INF = math.inf

HEAD = '[cluster]\nbandwidth = "10Gbit/s"\n\n[[types]]\nname = "k80"\ncount = 4\n\n[[types]]\nname = "v100"\ncount = 4\n'
JOBS = "name,throughput_k80,throughput_v100,batch,iterations,tenant\n"


def _files(tmp_path, cluster, jobs=None):
    c = tmp_path / "cluster.toml"
    c.write_text(cluster, encoding="utf-8")
    j = tmp_path / "jobs.csv"
    j.write_text(jobs if jobs is not None else JOBS + "a,10,40,64,100,team-a\n", encoding="utf-8")
    return c, j


def run(argv):
    out = io.StringIO()
    code = main(argv, out=out)
    return code, out.getvalue()


# ---------------------------------------------------------------- reading
def test_the_example_reads_quotas_and_numbers_tenants_by_tables_then_jobs():
    spec = read_cluster(QUOTAS)
    assert spec.quotas == {"research": {"v100": 3, "p100": 2}, "product": {"k80": 0, "v100": 4},
                           "interns": {"v100": 0}}
    assert "quotas=" in repr(spec)
    p, names = load_problem(QUOTAS, TENANT_JOBS, return_tenant_names=True)
    # the three [[quotas]] tenants in file order (interns has no job), then ops from the job file
    assert names == ["research", "product", "interns", "ops"]
    assert p.tenant.tolist() == [0, 1, 0, 3, -1]  # cyclegan: blank tenant
    np.testing.assert_array_equal(p.quota, [[INF, 2, 3], [0, INF, 4], [INF, INF, 0], [INF, INF, INF]])
    assert p.has_quota and p.n_tenants == 4
    assert load_problem(QUOTAS, TENANT_JOBS).to_dict() == p.to_dict()  # one Problem, with or without the names


def test_read_jobs_gives_each_jobs_tenant_name_or_none():
    data = read_jobs(TENANT_JOBS, read_cluster(QUOTAS))
    assert data["tenant"] == ["research", "product", "research", "ops", None]
    assert read_jobs(EXAMPLES / "jobs.csv", read_cluster(EXAMPLES / "cluster.toml"))["tenant"] == [None] * 5


def test_files_without_tenants_give_the_problem_they_always_gave():
    spec = read_cluster(EXAMPLES / "cluster.toml")
    assert spec.quotas == {} and "quotas" not in repr(spec)
    p, names = load_problem(spec, EXAMPLES / "jobs.csv", return_tenant_names=True)
    assert names == [] and p.tenant is None and p.quota is None and not p.has_quota
    assert "tenant" not in p.to_dict()


def test_a_tenant_column_with_only_blanks_and_no_quotas_means_no_tenants(tmp_path):
    c, j = _files(tmp_path, HEAD, JOBS + "a,10,40,64,100,\nb,10,40,64,100,  \n")
    p = load_problem(c, j)
    assert p.tenant is None


def test_quotas_without_a_tenant_column_limit_nobody(tmp_path):
    c, j = _files(tmp_path, HEAD + '[[quotas]]\ntenant = "x"\nv100 = 0\n',
                  "name,throughput_k80,throughput_v100,batch,iterations\na,10,40,64,100\n")
    p, names = load_problem(c, j, return_tenant_names=True)
    assert names == ["x"] and p.tenant.tolist() == [-1] and not p.has_quota
    assert hp.is_feasible(p, [-1] * 4 + [0] * 4)


def test_a_job_tenant_without_a_table_is_unlimited_and_a_table_without_jobs_is_fine(tmp_path):
    c, j = _files(tmp_path, HEAD + '[[quotas]]\ntenant = "nobody"\nk80 = 1\n',
                  JOBS + "a,10,40,64,100,free\nb,10,40,64,100,free\n")
    p, names = load_problem(c, j, return_tenant_names=True)
    assert names == ["nobody", "free"] and p.tenant.tolist() == [1, 1]
    np.testing.assert_array_equal(p.quota, [[1, INF], [INF, INF]])
    assert not p.has_quota  # nobody's quota limits no job


@pytest.mark.parametrize("value", ['"inf"', '"Infinity"', "inf", "+inf"])
def test_inf_is_no_limit_like_a_type_left_out(tmp_path, value):
    c, j = _files(tmp_path, HEAD + f'[[quotas]]\ntenant = "team-a"\nk80 = {value}\nv100 = 2\n')
    assert read_cluster(c).quotas == {"team-a": {"v100": 2}}
    np.testing.assert_array_equal(load_problem(c, j).quota, [[INF, 2]])


def test_whole_floats_and_zero_and_spaces_around_the_tenant_are_accepted(tmp_path):
    c, j = _files(tmp_path, HEAD + '[[quotas]]\ntenant = " team-a "\nk80 = 0\nv100 = 3.0\n',
                  JOBS + "a,10,40,64,100, team-a \n")
    assert read_cluster(c).quotas == {"team-a": {"k80": 0, "v100": 3}}
    p = load_problem(c, j)
    assert p.tenant.tolist() == [0] and p.quota.tolist() == [[0.0, 3.0]]


def test_quotas_work_with_nodes_and_racks(tmp_path):
    text = ('[cluster]\nbandwidth = "25Gbit/s"\n\n[[nodes]]\ncount = 2\ntype = "v100"\ngpus = 4\n'
            'bandwidth = "300GB/s"\n\n[[quotas]]\ntenant = "t"\nv100 = 4\n')
    c, j = _files(tmp_path, text, "name,throughput_v100,batch,iterations,tenant\na,40,64,100,t\nb,40,64,100,\n")
    p = load_problem(c, j)
    assert p.topology is not None and p.quota.tolist() == [[4.0]] and p.has_quota


# ---------------------------------------------------------------- errors
Q = '[[quotas]]\ntenant = "team-a"\n'
BAD = {
    "unknown_type": (Q + "p100 = 2\n", ["[[quotas]] #1 (team-a), key 'p100'",
                                        "'p100' is not a GPU type of the cluster (k80, v100)",
                                        "name one of the cluster's types (k80, v100), or drop the key"]),
    "type_case": (Q + "V100 = 2\n", ["key 'V100'", "write the type as the cluster names it: v100."]),
    "negative": (Q + "v100 = -1\n", ["key 'v100'", "the quota of type v100 must be a whole number of workers >= 0, "
                                     "or \"inf\" for no limit; got -1, which is negative.", "e.g. v100 = 4 (leave the type out"]),
    "fractional": (Q + "k80 = 2.5\n", ["key 'k80'", "got 2.5, which is not a whole number.", "e.g. k80 = 4"]),
    "negative_float": (Q + "v100 = -2.0\n", ["got -2.0, which is negative."]),
    "string": (Q + 'v100 = "4"\n', ["got '4', which is a string, not a number.", "with no quotes, e.g. v100 = 4"]),
    "bool": (Q + "v100 = true\n", ["got True, which is not a number."]),
    "nan": (Q + "v100 = nan\n", ["got nan, which is not a number (nan)."]),
    "dotted": (Q + "v100.x = 1\n", ["key 'v100'", "got {'x': 1}, which is not a number."]),
    "huge": (Q + "v100 = 9007199254740993\n", ["is above 2**53 = 9007199254740992"]),
    "huge_float": (Q + "v100 = 1e300\n", ["got 1e+300, which is above 2**53"]),
    "duplicate": (Q + "v100 = 1\n" + Q + "k80 = 1\n", ["[[quotas]] #2 (team-a), key 'tenant'",
                                                     "tenant 'team-a' has two [[quotas]] tables (#1 and #2).",
                                                     "merge them into one table per tenant."]),
    "tenant_number": ('[[quotas]]\ntenant = 3\nv100 = 1\n', ["[[quotas]] #1, key 'tenant'",
                                                            "tenant must be a non-empty string; got 3.",
                                                            "tenant = \"team-a\""]),
    "tenant_blank": ('[[quotas]]\ntenant = "  "\n', ["[[quotas]] #1, key 'tenant'", "got '  '"]),
    "tenant_missing": ('[[quotas]]\nv100 = 1\n', ["[[quotas]] #1, key 'tenant'", "the tenant's name is missing.",
                                                  "add tenant = \"team-a\""]),
    "not_tables": ('quotas = 3\n', ["quotas", "'quotas' must be an array of tables.", "one [[quotas]] section"]),
    "list_of_numbers": ('quotas = [1]\n', ["'quotas' must be an array of tables."]),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_quota_tables_name_file_table_key_value_and_fix(tmp_path, case):
    text, fragments = BAD[case]
    top = text.startswith("quotas =")
    c, _ = _files(tmp_path, (text + HEAD) if top else (HEAD + text))
    with pytest.raises(InputFileError, match="Fix:") as info:
        read_cluster(c)
    msg = str(info.value)
    assert msg.startswith(str(c))
    for fragment in fragments:
        assert fragment in msg, (fragment, msg)


def test_a_gpu_type_named_tenant_is_refused_with_quotas(tmp_path):
    text = '[cluster]\nbandwidth = 1e9\n\n[[types]]\nname = "tenant"\ncount = 2\n\n' + Q
    c, _ = _files(tmp_path, text)
    with pytest.raises(InputFileError, match=r"quotas: a GPU type is named 'tenant'.*Fix: rename that GPU type"):
        read_cluster(c)
    c.write_text(text.replace(Q, ""))  # without [[quotas]] the name is fine
    assert read_cluster(c).type_names == ["tenant"]


def test_an_unknown_column_lists_tenant_among_the_columns(tmp_path):
    c, j = _files(tmp_path, HEAD, "name,throughput_k80,throughput_v100,batch,iterations,team\na,1,1,1,1,x\n")
    with pytest.raises(InputFileError, match=r"unknown column 'team'.*use only name, model, batch, iterations, "
                       r"grad_bytes, tenant"):
        load_problem(c, j)


def test_quotas_that_leave_a_job_no_worker_are_refused_naming_the_tenants(tmp_path):
    c, j = _files(tmp_path, HEAD + Q + "k80 = 0\nv100 = 0\n")
    with pytest.raises(InputFileError) as info:
        load_problem(c, j)
    msg = str(info.value)
    assert msg.startswith(f"{c} + {j}: the jobs cannot be placed on this cluster: job 'a' (tenant 0)")
    assert "raise the tenants' [[quotas]]" in msg and "(tenants: 0 = 'team-a')" in msg


def test_quotas_that_the_jobs_cannot_meet_together_are_refused(tmp_path):
    c, j = _files(tmp_path, HEAD + Q + "v100 = 1\n",
                  JOBS + "a,0,40,64,100,team-a\nb,0,40,64,100,team-a\n")
    with pytest.raises(InputFileError, match=r"no placement gives every job its min_workers within the quotas.*"
                       r"Fix: add workers.*raise the tenants' \[\[quotas\]\]"):
        load_problem(c, j)


# ---------------------------------------------------------------- tenant_arrays (the dict form)
def test_tenant_arrays_orders_and_fills():
    names, tenant, quota = tenant_arrays({"a": {"v100": 4}, "b": {}}, ["c", None, "a", "", "c"], ["k80", "v100"])
    assert names == ["a", "b", "c"] and tenant.tolist() == [2, -1, 0, -1, 2]
    assert quota.tolist() == [[INF, 4.0], [INF, INF], [INF, INF]]
    assert tenant_arrays(None, [None, None], ["k80"]) == ([], None, None)
    assert tenant_arrays(None, None, ["k80"]) == ([], None, None)
    names, tenant, _ = tenant_arrays({"a": {}}, None, ["k80"])
    assert names == ["a"] and tenant.tolist() == []
    assert tenant_arrays({}, [], ["k80"]) == ([], None, None)
    names, tenant, quota = tenant_arrays({"a": {"k80": INF, "v100": np.int64(2)}}, [], ["k80", "v100"])
    assert tenant.tolist() == [] and quota.tolist() == [[INF, 2.0]]


@pytest.mark.parametrize("quotas, tenants, message", [
    ([("a", {})], [], r"quotas must be a dict \{tenant name: \{type name: max GPUs\}\}; got \[\('a', \{\}\)\]"),
    ({3: {}}, [], r"quotas has the key 3, not a tenant name\. Use non-empty strings"),
    ({"a": 4}, [], r"quotas\['a'\] must be a dict \{type name: max GPUs\}; got 4"),
    ({"a": {"p100": 1}}, [], r"quotas\['a'\] names 'p100', not a GPU type of the problem \(k80, v100\)\. Name one"),
    ({"a": {"V100": 1}}, [], r"names 'V100'.*Write the type as the cluster names it: v100"),
    ({"a": {"v100": -1}}, [], r"quotas\['a'\]\['v100'\] = -1 is negative\. Give a whole number of workers >= 0"),
    ({"a": {"v100": 1.5}}, [], r"quotas\['a'\]\['v100'\] = 1\.5 is not a whole number"),
    ({"a": {"v100": "2"}}, [], r"= '2' is a string, not a number"),
    ({"a": {"v100": True}}, [], r"= True is not a number"),
    ({}, ["a", 7], r"tenants\[1\] = 7 is not a tenant name\. Give a string, or None"),
    ({}, "ab", r"tenants must be a sequence of one tenant name \(or None\) per job; got 'ab'"),
    ({}, 5, r"tenants must be a sequence.*got 5\. Pass e\.g\."),
])
def test_tenant_arrays_errors_name_the_parameter_the_value_and_the_fix(quotas, tenants, message):
    with pytest.raises(InvalidProblemError, match=message):
        tenant_arrays(quotas, tenants, ["k80", "v100"])


def test_a_cluster_spec_built_in_python_is_checked_when_loaded(tmp_path):
    spec = read_cluster(_files(tmp_path, HEAD)[0])
    spec.quotas = {"team-a": {"p100": 1}}
    with pytest.raises(InvalidProblemError, match=r"quotas\['team-a'\] names 'p100'"):
        load_problem(spec, tmp_path / "jobs.csv")
    spec.quotas = {"team-a": {"v100": 1}}
    assert load_problem(spec, tmp_path / "jobs.csv").quota.tolist() == [[INF, 1.0]]


# ---------------------------------------------------------------- writing and round trips
def _with_tenants(p, seed):
    """``p`` with random tenants (some jobs none) and quotas its jobs can meet (None when none found)."""
    rng = np.random.default_rng(seed)
    T = int(rng.integers(1, 4))
    for _ in range(50):
        tenant = rng.integers(-1, T, p.n_jobs)
        quota = rng.integers(0, p.type_counts.max() + 2, (T, p.n_types)).astype(float)
        quota[rng.random((T, p.n_types)) < 0.3] = INF
        try:
            return hp.Problem.from_dict({**p.to_dict(), "tenant": tenant.tolist(),
                                         "quota": [[q if math.isfinite(q) else "inf" for q in r] for r in quota]})
        except InvalidProblemError:
            continue
    return None


@pytest.mark.parametrize("seed", range(12))
def test_write_then_read_round_trips_tenants_and_quotas(tmp_path, seed):
    p = _with_tenants(tiny_random(seed), seed)
    assert p is not None
    names = [f"team {t}" for t in range(p.n_tenants)][::-1]  # names need not sort like the numbers
    write_cluster(tmp_path / "c.toml", p, tenant_names=names)
    write_jobs(tmp_path / "j.csv", p, tenant_names=names)
    q, back = load_problem(tmp_path / "c.toml", tmp_path / "j.csv", return_tenant_names=True)
    assert back == names and q.to_dict() == p.to_dict()
    # default names
    write_cluster(tmp_path / "c.toml", p)
    write_jobs(tmp_path / "j.csv", p)
    q, back = load_problem(tmp_path / "c.toml", tmp_path / "j.csv", return_tenant_names=True)
    assert back == [f"tenant{t}" for t in range(p.n_tenants)] and q.to_dict() == p.to_dict()


@pytest.mark.parametrize("seed", range(4))
def test_round_trip_with_nodes_and_quotas(tmp_path, seed):
    p = _with_tenants(tiny_topology(seed), seed)
    assert p is not None
    write_cluster(tmp_path / "c.toml", p)
    write_jobs(tmp_path / "j.csv", p)
    assert load_problem(tmp_path / "c.toml", tmp_path / "j.csv").to_dict() == p.to_dict()


def test_round_trip_of_the_example(tmp_path):
    p, names = load_problem(QUOTAS, TENANT_JOBS, return_tenant_names=True)
    write_cluster(tmp_path / "c.toml", p, tenant_names=names)
    write_jobs(tmp_path / "j.csv", p, tenant_names=names)
    text = (tmp_path / "c.toml").read_text()
    assert '[[quotas]]\ntenant = "interns"\nv100 = 0\n' in text and '[[quotas]]\ntenant = "ops"\n' in text
    assert (tmp_path / "j.csv").read_text().splitlines()[-1].endswith(",")  # cyclegan: no tenant
    q, back = load_problem(tmp_path / "c.toml", tmp_path / "j.csv", return_tenant_names=True)
    assert back == names and q.to_dict() == p.to_dict()


def test_writers_of_a_problem_without_tenants_write_no_tenant_fields(tmp_path):
    p = load_problem(EXAMPLES / "cluster.toml", EXAMPLES / "jobs.csv")
    write_cluster(tmp_path / "c.toml", p)
    write_jobs(tmp_path / "j.csv", p)
    assert "quotas" not in (tmp_path / "c.toml").read_text()
    assert "tenant" not in (tmp_path / "j.csv").read_text()


def test_quoted_type_names_round_trip(tmp_path):
    p = hp.Problem([[1.0, 2.0]], [2, 2], [8], [10.0], type_names=["a.1", "b"], tenant=[0], quota=[[1, INF]])
    write_cluster(tmp_path / "c.toml", p)
    write_jobs(tmp_path / "j.csv", p)
    assert '"a.1" = 1' in (tmp_path / "c.toml").read_text()
    assert read_cluster(tmp_path / "c.toml").quotas == {"tenant0": {"a.1": 1}}


@pytest.mark.parametrize("names, message", [
    (["x"], r"tenant_names has 1 names but the problem has 2 tenants; give one name per row of problem.quota"),
    (["x", "x"], r"tenant_names names tenant 'x' twice; give every tenant its own name"),
    (["x", 3], r"tenant_names\[1\] = 3 is not a tenant name; give a non-empty string"),
    (["x", " y"], r"tenant_names\[1\] = ' y' is not a tenant name"),
    ("xy", r"tenant_names must be a list of 2 tenant names"),
])
def test_writers_check_the_tenant_names(tmp_path, names, message):
    p = hp.Problem([[1.0, 2.0], [1.0, 2.0]], [2, 2], [8, 8], [10.0, 10.0], tenant=[0, 1])
    for write in (write_cluster, write_jobs):
        with pytest.raises(InvalidOptionError, match=message):
            write(tmp_path / "out", p, tenant_names=names)


def test_a_type_named_tenant_is_not_written_with_quotas(tmp_path):
    p = hp.Problem([[1.0]], [2], [8], [10.0], type_names=["tenant"], tenant=[0])
    with pytest.raises(InvalidOptionError, match=r"GPU type named 'tenant'.*Rename that type.*to_dict"):
        write_cluster(tmp_path / "c.toml", p)


def test_write_placement_adds_tenants_and_usage(tmp_path):
    p, names = load_problem(QUOTAS, TENANT_JOBS, return_tenant_names=True)
    # research (jobs 0, 2): 2 p100, 3 v100; product (job 1): 3 v100; ops (job 3): 4 k80; cyclegan: 4 p100
    wj = [3] * 4 + [0, 2] + [4] * 4 + [0, 0, 2, 1, 1, 1]
    pl = hp.evaluate(p, wj)
    write_placement(pl, tmp_path / "p.json", tenant_names=names)
    doc = json.loads((tmp_path / "p.json").read_text())
    assert [j["tenant"] for j in doc["jobs"]] == ["research", "product", "research", "ops", None]
    assert doc["quotas"]["research"] == {"k80": {"used": 0, "quota": None}, "p100": {"used": 2, "quota": 2},
                                         "v100": {"used": 3, "quota": 3}}
    assert doc["quotas"]["interns"]["v100"] == {"used": 0, "quota": 0}
    assert doc["quotas"]["ops"]["k80"] == {"used": 4, "quota": None}
    write_placement(pl, tmp_path / "p.txt", tenant_names=names)
    text = (tmp_path / "p.txt").read_text()
    assert "GPUs per tenant: used/quota (- = no limit)" in text
    rows = {line.split()[0]: line.split()[1:] for line in text.splitlines()[-4:]}
    assert rows == {"research": ["2", "0/-", "2/2", "3/3"], "product": ["1", "0/0", "0/-", "3/4"],
                    "interns": ["0", "0/-", "0/-", "0/0"], "ops": ["1", "4/-", "0/-", "0/-"]}
    write_placement(pl, tmp_path / "q.json")  # default names
    assert list(json.loads((tmp_path / "q.json").read_text())["quotas"]) == ["tenant0", "tenant1", "tenant2",
                                                                            "tenant3"]


# ---------------------------------------------------------------- the command line
def test_place_on_the_quota_example_respects_every_quota():
    code, text = run(["place", "--cluster", str(QUOTAS), "--jobs", str(TENANT_JOBS), "--method", "smp", "--json",
                      "--no-bound"])
    assert code == 0, text
    doc = json.loads(text)
    p, names = load_problem(QUOTAS, TENANT_JOBS, return_tenant_names=True)
    job = {n: i for i, n in enumerate(p.job_names)}
    wj = [-1 if w["job"] is None else job[w["job"]] for w in doc["workers"]]
    assert hp.is_feasible(p, wj)
    assert list(doc["quotas"]) == names
    for tenant in doc["quotas"].values():
        for cell in tenant.values():
            assert cell["quota"] is None or cell["used"] <= cell["quota"]
    assert [j["tenant"] for j in doc["jobs"]] == ["research", "product", "research", "ops", None]


def test_place_text_shows_the_usage_table(tmp_path):
    # quotas that bind no method (every job can run within them), so any method gives a placement
    c, j = _files(tmp_path, HEAD + Q + "v100 = 4\n\n[[quotas]]\ntenant = \"idle\"\nk80 = 1\n",
                  JOBS + "a,10,40,64,100,team-a\nb,10,40,64,100,other\nc,10,40,64,100,\n")
    code, text = run(["place", "--cluster", str(c), "--jobs", str(j), "--method", "equal", "--no-bound"])
    assert code == 0, text
    assert "tenants=3" in text and "GPUs per tenant: used/quota (- = no limit)" in text
    lines = text.splitlines()
    head = lines.index("GPUs per tenant: used/quota (- = no limit)")
    assert lines[head + 1].split() == ["tenant", "jobs", "k80", "v100"]
    assert [line.split()[:2] for line in lines[head + 2:head + 5]] == [["team-a", "1"], ["idle", "0"],
                                                                       ["other", "1"]]
    assert lines[head + 2].split()[3].endswith("/4") and lines[head + 3].split()[2] == "0/1"
    code, out = run(["place", "--cluster", str(c), "--jobs", str(j), "--method", "equal", "--no-bound",
                     "--out", str(tmp_path / "p.json")])
    assert code == 0 and json.loads((tmp_path / "p.json").read_text())["quotas"]["idle"]["k80"]["quota"] == 1


def test_place_without_tenants_prints_no_usage_and_no_quota_keys():
    args = ["place", "--cluster", str(EXAMPLES / "cluster.toml"), "--jobs", str(EXAMPLES / "jobs.csv"),
            "--method", "equal", "--no-bound"]
    code, text = run(args)
    assert code == 0 and "GPUs per tenant" not in text
    doc = json.loads(run([*args, "--json"])[1])
    assert "quotas" not in doc and all("tenant" not in j for j in doc["jobs"])


def test_a_library_refusal_about_tenants_is_one_line_with_the_tenant_names(monkeypatch, capsys):
    import hetplace.api

    def refuse(problem, method, seed):
        raise InvalidOptionError("method='x' cannot honour the quota of tenant 0; use method='smp'.")

    monkeypatch.setattr(hetplace.api, "place", refuse)
    code, text = run(["place", "--cluster", str(QUOTAS), "--jobs", str(TENANT_JOBS)])
    err = capsys.readouterr().err
    assert code == 2 and text == "" and err.count("\n") == 1
    assert err == ("hetplace: error: method='x' cannot honour the quota of tenant 0; use method='smp'. (tenants by "
                   "number: 0 = 'research', 1 = 'product', 2 = 'interns', 3 = 'ops')\n")


def test_the_type_dps_refusal_reaches_the_command_line_as_one_line(monkeypatch, capsys):
    import hetplace.api

    # the CLI offers no --method dp; route its place() to the type DP, which refuses binding quotas
    monkeypatch.setattr(hetplace.api, "place", lambda problem, method, seed: hp.solve_exact(problem, method="dp"))
    code, text = run(["place", "--cluster", str(QUOTAS), "--jobs", str(TENANT_JOBS)])
    err = capsys.readouterr().err
    assert code == 2 and text == "" and err.count("\n") == 1
    assert err.startswith("hetplace: error: method='dp'") and "tenant" in err
    assert err.endswith("(tenants by number: 0 = 'research', 1 = 'product', 2 = 'interns', 3 = 'ops')\n")


def test_a_bad_quota_file_is_one_line_on_stderr(tmp_path, capsys):
    c, j = _files(tmp_path, HEAD + Q + "v100 = -1\n")
    code, _ = run(["place", "--cluster", str(c), "--jobs", str(j)])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert err.startswith(f"hetplace: error: {c}, [[quotas]] #1 (team-a), key 'v100': the quota of type v100")
