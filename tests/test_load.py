"""Reading instance files: the YAML layer's limits, large files, seed 000's HyperNode examples,
and what the loader makes of valid input (names, defaults, node groups, resource forms)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from models import yamlio
from models.errors import InputError
from models.load import load, loads
from models.resources import Resources

DATA = Path(__file__).parent / "data"
SEED000 = DATA / "seed000"
HEAD = 'apiVersion: vcopt/v1alpha1\nkind: Instance\nnow: "2026-11-30T14:00:00Z"\n'


def refused(text: str) -> str:
    with pytest.raises(InputError) as caught:
        yamlio.load_documents(text, "f.yaml")
    [problem] = caught.value.problems
    assert problem.file == "f.yaml"
    return problem.message


# -- large files ------------------------------------------------------------------------------


@pytest.mark.timeout(120)
def test_five_thousand_nodes_and_fifty_thousand_pods_load(tmp_path: Path) -> None:
    """250 racks of 20 plain ``nodes:`` entries under one spine, and 5,000 jobs of 10 replicas.
    Every count is fixed by construction: rack-000 holds n-0000…n-0019, the spine all 5,000."""
    lines = [HEAD.rstrip(), "nodes:"]
    for i in range(5000):
        lines.append(
            f"- {{name: n-{i:04d}, labels: {{rack: r-{i // 20:03d}}}, "
            'allocatable: {cpu: "64", memory: 512Gi, pods: 110}, '
            "gpus: {count: 8, type: A100, memory: 81920}}"
        )
    lines.append("hypernodes:")
    for r in range(250):
        lines.append(
            f"- {{name: rack-{r:03d}, tier: 1, members: "
            f"[{{type: Node, selector: {{labelMatch: {{matchLabels: {{rack: r-{r:03d}}}}}}}}}]}}"
        )
    lines.append(
        "- {name: spine, tier: 2, members: [{type: HyperNode, selector: "
        "{regexMatch: {pattern: '^rack-'}}}]}"
    )
    lines.append("queues: [{name: root}, {name: batch, parent: root}]")
    lines.append("jobs:")
    for j in range(5000):
        lines.append(
            f"- {{name: job-{j:04d}, queue: batch, tasks: [{{name: w, replicas: 10, "
            'resources: {cpu: "1", memory: 1Gi, nvidia.com/gpu: 1}}]}'
        )
    path = tmp_path / "xl.yaml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")

    instance = load(path)

    assert len(instance.nodes) == 5000
    assert len(instance.pods) == 50_000
    assert sum(len(n.gpus) for n in instance.nodes) == 40_000
    assert instance.topology.node_count("rack-000") == 20
    assert instance.topology.node_count("spine") == 5000
    assert instance.nodes[4999].allocatable["memory"] == 512 * 2**30


def test_file_over_the_size_limit_is_refused_before_reading(tmp_path: Path) -> None:
    """A sparse file one byte over MAX_BYTES: refused from its size alone, so this is cheap."""
    path = tmp_path / "huge.yaml"
    with path.open("wb") as f:
        f.write(b"# a very long comment\n")
        f.truncate(yamlio.MAX_BYTES + 1)
    with pytest.raises(InputError) as caught:
        load(path)
    [problem] = caught.value.problems
    assert problem.file == str(path)
    assert f"{yamlio.MAX_BYTES + 1:,} bytes" in problem.message
    assert f"limit of {yamlio.MAX_BYTES:,} bytes" in problem.message


def test_size_limit_boundary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file of exactly MAX_BYTES loads; one byte less of allowance refuses it."""
    path = tmp_path / "small.yaml"
    path.write_text(HEAD, encoding="utf-8")
    size = path.stat().st_size
    monkeypatch.setattr(yamlio, "MAX_BYTES", size)
    assert load(path).name == "small"
    monkeypatch.setattr(yamlio, "MAX_BYTES", size - 1)
    with pytest.raises(InputError, match="limit"):
        load(path)


@pytest.mark.parametrize(
    ("text", "nodes"),
    [
        ("a: [x, y]\n", 5),
        ("a: &x [1, 2]\nb: *x\n", 9),
        ("- &s text\n- *s\n- *s\n", 4),
    ],
)
def test_expanded_node_limit_counts_aliases_expanded(
    text: str, nodes: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """YAML nodes as PyYAML would build them, aliases counted at their expanded size:
    ``a: [x, y]`` is the mapping, ``a``, the list and two items (5); adding ``b: *x`` after
    ``&x [1, 2]`` adds ``b`` and the 3 nodes of the list again (9); a sequence of a scalar and
    two aliases of it is 4. Exactly the limit loads, one below refuses."""
    monkeypatch.setattr(yamlio, "MAX_EXPANDED_NODES", nodes)
    assert yamlio.load_documents(text, "f.yaml")
    monkeypatch.setattr(yamlio, "MAX_EXPANDED_NODES", nodes - 1)
    assert "expands to more than" in refused(text)


# -- the YAML layer -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "a: [yes, No, on, ~, null, '', 0x1F, 0o17, 017, 1_000, 1:30, .inf, -.5, 1e3, 2.5]\n",
        'b: ["5", "true", 2026-11-30, 2026-11-30T14:00:00Z, 2026-11-30 14:00:00 +01:00]\n',
        "c: {1: one, 1.5: x, null: n, true: t}\n",
        "d: |\n  line one\n  line two\ne: >\n  folded\n  text\n",
        "base: &b {x: 1}\nuse: [*b, *b]\n",
        "---\n---\nx: 1\n---\n- 2\n",
        "merged:\n  <<: {x: 1}\n  y: 2\n",
        "tagged: !!str 5\nset: !!set {a, b}\nbin: !!binary aGk=\n",
        "empty:\nlist: []\nmap: {}\n",
    ],
)
def test_documents_are_what_pyyaml_safe_load_builds(text: str) -> None:
    """The event builder resolves scalars as YAML 1.1 does in PyYAML (booleans yes/No/on,
    octal 017, sexagesimal 1:30, timestamps), shares aliased objects, and leaves merge keys
    and explicit tags to PyYAML itself."""
    expected = [d for d in yaml.load_all(text, Loader=yaml.SafeLoader) if d is not None]
    assert yamlio.load_documents(text, "f.yaml") == expected


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("a: 1\na: 2\n", 2),
        ("nodes: []\njobs: []\nnodes: [{name: x}]\n", 3),
        ("a: {k: 1, 'k': 2}\n", 1),
        ("bin: !!binary aGk=\nd: 1\nd: 2\n", 3),
        ("x: 0\n" * 100_000, 2),
    ],
)
def test_duplicate_keys_are_refused_at_their_line(text: str, line: int) -> None:
    """Kubernetes' decoder refuses a key given twice; PyYAML would keep the last one, so a
    second ``nodes:`` silently replaced the first. ``k`` and ``'k'`` are the same key; a tagged
    document takes PyYAML's path and is checked the same way; 100,000 copies stop at the
    first repeat."""
    with pytest.raises(InputError) as caught:
        yamlio.load_documents(text, "f.yaml")
    [problem] = caught.value.problems
    assert problem.file == "f.yaml"
    assert f"line {line}" in problem.message
    assert "duplicate key" in problem.message


def test_aliases_share_one_object() -> None:
    [doc] = yamlio.load_documents("base: &b {x: 1}\nuse: [*b, *b]\n", "f.yaml")
    assert doc["use"][0] is doc["base"]
    assert doc["use"][1] is doc["base"]


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("a: 2026-02-30\n", "line 1: cannot read '2026-02-30' as YAML timestamp"),
        ("a: !!int twelve\n", "line 1: cannot read 'twelve' as YAML int"),
        ("a: &x {b: *x}\n", "line 1: alias *x refers to a collection inside itself"),
        ("a: *nowhere\n", "line 1: alias *nowhere names no anchor defined before it"),
        ("a: [1, 2\n", "not valid YAML: line 2"),
        ("a: !!python/name:os.system\n", "not valid YAML"),
        ("? [1, 2]\n: pair\n", "found unhashable key"),
        ("a: " + "[" * 64 + "]" * 64 + "\n", "line 1: nesting deeper than 64 levels"),
        ("a: " + "[" * 2000 + "]" * 2000 + "\n", "nesting deeper than 64 levels"),
    ],
)
def test_what_the_yaml_layer_refuses(text: str, fragment: str) -> None:
    """Dates that do not exist, values an explicit tag cannot hold, recursive and dangling
    aliases, syntax errors, Python tags, unhashable keys and nesting beyond 64 levels (the
    mapping and 64 lists reach the check; 2,000 lists trip libyaml's own look-ahead limit
    first) each give one message."""
    assert fragment in refused(text)


def test_sixty_four_levels_are_fine() -> None:
    """The mapping is level 1, so ``a:`` and 63 nested lists make exactly 64 levels (the
    corpus and the test above refuse 65)."""
    [doc] = yamlio.load_documents("a: " + "[" * 63 + "]" * 63 + "\n", "f.yaml")
    lists, node = 0, doc["a"]
    while isinstance(node, list):
        lists, node = lists + 1, node[0] if node else None
    assert lists == 63


# -- seed 000 §8: full HyperNode CRs inside a compact instance --------------------------------


@pytest.mark.parametrize(
    ("name", "counts"),
    [
        ("exact_match_8_1", {"rack-1": 3}),
        ("regex_match_8_2", {"rack-gpu": 2}),
        ("label_match_8_3", {"rack-high-bandwidth": 1}),
        ("multi_tier_8_4", {"rack-1": 4, "rack-2": 3, "spine-1": 7, "super-spine-1": 7}),
    ],
)
def test_seed000_examples_load_unchanged(name: str, counts: dict[str, int]) -> None:
    """Counts from each file's header: 8.1 lists 3 of 4 nodes, 8.2's pattern matches
    gpu-node-1 and gpu-node-12, 8.3 needs both labels (node-a1 only), 8.4 is seed 000 §1.3."""
    instance = load(SEED000 / f"{name}.yaml")
    assert {hn: instance.topology.node_count(hn) for hn in instance.topology.names} == counts


def test_seed000_missing_spine_2_is_one_warning() -> None:
    instance = load(SEED000 / "multi_tier_8_4.yaml")
    [warning] = instance.warnings
    assert warning.obj == 'HyperNode "super-spine-1"'
    assert warning.field == "members[1].selector.exactMatch.name"
    assert instance.topology.children("super-spine-1") == ("spine-1",)


def test_tiers_and_names_come_from_the_spec_of_the_cr() -> None:
    instance = load(SEED000 / "multi_tier_8_4.yaml")
    assert instance.topology.tier("super-spine-1") == 3
    assert instance.topology.tier_name("spine-1") == "spine"


# -- what valid input becomes -----------------------------------------------------------------


def test_name_defaults_to_the_file_stem(tmp_path: Path) -> None:
    path = tmp_path / "cluster-a.yaml"
    path.write_text(HEAD, encoding="utf-8")
    assert load(path).name == "cluster-a"


def test_node_groups_expand_with_zero_padded_names_and_own_devices() -> None:
    """count 3 from start 9 gives 9, 10, 11: the widest number has 2 digits, padded to at least
    3; each node gets its own GPU ids (GPU-<node>-<i>) and nvidia.com/gpu = 2 devices × 10
    time-slices = 20 GPUs, i.e. 20,000 milli-units."""
    instance = loads(
        HEAD + "nodeGroups:\n- {namePrefix: pool-, start: 9, count: 3, labels: {pool: a}, "
        "allocatable: {cpu: '4'}, gpus: {count: 2, type: T4, memory: 16384}}\n"
    )
    assert [n.name for n in instance.nodes] == ["pool-009", "pool-010", "pool-011"]
    assert [d.id for d in instance.nodes[2].gpus] == ["GPU-pool-011-0", "GPU-pool-011-1"]
    assert instance.nodes[1].labels == {"pool": "a", "kubernetes.io/hostname": "pool-010"}
    assert instance.nodes[1].allocatable == Resources({"cpu": 4000, "nvidia.com/gpu": 20_000})


def test_a_broken_node_group_is_reported_once_on_the_group() -> None:
    with pytest.raises(InputError) as caught:
        loads(HEAD + "nodeGroups:\n- {namePrefix: p-, count: 50, allocatable: {cpu: -1}}\n")
    [problem] = caught.value.problems
    assert (problem.obj, problem.field) == ('NodeGroup "p-"', "allocatable.cpu")


def test_node_order_follows_the_file() -> None:
    """Volcano walks nodes in cache order; groups written before nodes come first."""
    text = HEAD + "nodeGroups: [{namePrefix: g-, count: 1}]\nnodes: [{name: a}]\n"
    assert [n.name for n in loads(text).nodes] == ["g-000", "a"]
    text = HEAD + "nodes: [{name: a}]\nnodeGroups: [{namePrefix: g-, count: 1}]\n"
    assert [n.name for n in loads(text).nodes] == ["a", "g-000"]


def test_requests_and_limits() -> None:
    """As in Kubernetes, a limit without a request sets the request; an explicit request of 0
    stays 0; the GPU request is read from the limits (HAMi)."""
    instance = loads(
        HEAD + "jobs:\n- name: j\n  tasks:\n  - name: t\n    resources:\n"
        "      requests: {cpu: '0', memory: 1Gi}\n"
        "      limits: {cpu: '2', memory: 2Gi, nvidia.com/gpu: 1}\n"
    )
    task = instance.jobs[0].tasks[0]
    assert task.resources == Resources({"memory": 2**30, "nvidia.com/gpu": 1000})
    assert task.gpu[0].nums == 1


def test_a_job_without_queue_goes_to_an_implicit_default_queue() -> None:
    instance = loads(HEAD + "jobs: [{name: j, tasks: [{name: t}]}]\n")
    assert instance.jobs[0].queue == "default"
    assert [q.name for q in instance.queues] == ["default"]


def test_queues_accept_full_crs() -> None:
    """A Queue pasted from kubectl: metadata.name, spec fields, status.state."""
    instance = loads(
        HEAD + "queues:\n- apiVersion: scheduling.volcano.sh/v1beta1\n  kind: Queue\n"
        "  metadata: {name: team, uid: abc}\n  spec: {weight: 3, deserved: {cpu: '2'}}\n"
        "  status: {state: Closed}\n"
    )
    [queue] = instance.queues
    assert (queue.name, queue.weight, queue.state) == ("team", 3, "Closed")
    assert queue.deserved == Resources({"cpu": 2000})


def test_highest_tier_name_resolves_to_its_lowest_tier() -> None:
    """Two HyperNodes named tier "zone" at tiers 3 and 2: the name means tier 2, as in
    ``Topology.tier_by_name`` (the other tier gets a warning from the topology checks)."""
    instance = loads(
        HEAD + "nodes: [{name: n}]\nhypernodes:\n"
        "- {name: a, tier: 3, tierName: zone, members: [{type: Node, selector: "
        "{exactMatch: {name: n}}}]}\n"
        "- {name: b, tier: 2, tierName: zone, members: [{type: Node, selector: "
        "{exactMatch: {name: n}}}]}\n"
        "jobs: [{name: j, networkTopology: {highestTierName: zone}, tasks: [{name: t}]}]\n"
    )
    assert instance.jobs[0].network_topology.highest_tier == 2


def test_running_pods_may_share_a_gpu_within_its_limits() -> None:
    """Two pods holding 40,960 MiB and 50 cores each fill an 81,920 MiB, 100-core device
    exactly: allowed (the corpus file gpu_shares_sum_over_memory goes 9,040 MiB over)."""
    instance = loads(
        HEAD + "nodes: [{name: n, gpus: [{id: G, index: 0, memory: 81920}]}]\n"
        "jobs:\n- name: j\n  tasks: [{name: t, replicas: 2, resources: "
        "{nvidia.com/gpu: 1, nvidia.com/gpumem: 40960, nvidia.com/gpucores: 50}}]\n"
        "  running:\n"
        "  - {index: 0, node: n, gpus: [{id: G, memory: 40960, cores: 50}]}\n"
        "  - {index: 1, node: n, gpus: [{id: G, memory: 40960, cores: 50}]}\n"
    )
    assert [p.node for p in instance.pods] == ["n", "n"]


def test_warnings_name_the_file(tmp_path: Path) -> None:
    path = tmp_path / "nonow.yaml"
    path.write_text("apiVersion: vcopt/v1alpha1\nkind: Instance\n", encoding="utf-8")
    [warning] = load(path).warnings
    assert (warning.file, warning.obj, warning.field) == (str(path), 'Instance "nonow"', "now")


def test_other_api_groups_are_read_as_kubernetes_objects() -> None:
    """Only vcopt's own group is the compact form; a Node goes to the kubectl reader."""
    instance = loads(
        "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nstatus: {allocatable: {cpu: '4'}}\n",
        "dump.yaml",
    )
    assert [n.name for n in instance.nodes] == ["n1"]


def test_shape_errors_inside_a_pasted_cr_name_the_path_as_written() -> None:
    """In a full HyperNode CR the tier sits under spec, so the path says spec.tierz."""
    with pytest.raises(InputError) as caught:
        loads(
            HEAD + "hypernodes:\n- apiVersion: topology.volcano.sh/v1alpha1\n  kind: HyperNode\n"
            "  metadata: {name: rack-1}\n  spec: {tier: 1, tierz: 2, members: []}\n"
        )
    [problem] = caught.value.problems
    assert (problem.obj, problem.field) == ('HyperNode "rack-1"', "spec.tierz")


def test_device_without_end_is_refused_not_read_forever() -> None:
    """``stat()`` gives /dev/zero a size of 0; the read itself is what must stop."""
    with pytest.raises(InputError) as caught:
        yamlio.read_text("/dev/zero")
    [problem] = caught.value.problems
    assert problem.file == "/dev/zero"
    assert "NUL bytes" in problem.message


def test_pipe_is_bounded_by_the_bytes_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A FIFO has no size to check beforehand; the limit counts what comes through it."""
    import os
    import threading

    monkeypatch.setattr(yamlio, "MAX_BYTES", 1000)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)

    def feed() -> None:
        try:
            with fifo.open("w") as out:
                out.write("a: b\n" * 10_000)
        except BrokenPipeError:
            pass

    writer = threading.Thread(target=feed)
    writer.start()
    with pytest.raises(InputError, match="more than the limit of 1,000 bytes"):
        yamlio.read_text(fifo)
    writer.join(10)
