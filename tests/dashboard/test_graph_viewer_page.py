"""The graph_viewer page in a real headless Chromium on the dashboard fixture's TPU
profile: the SVG's nodes and edges are the API's, each node filled by its band of op time;
clicking a node re-centres the graph on it (the op option in the address) and the page
then shows the API's neighbourhood of that op; a GPU profile says in one line that it has
no XLA programs."""

from __future__ import annotations

from urllib.parse import parse_qs, urlparse

from stepscope.analysis import applicability
from tests.support.dashboard.browser import data, open_tool, shot, wait_ready
from tests.support.dashboard.logdir import TPU_SESSION

TPU = dict(run=f"tpu/{TPU_SESSION}", host="tpu_host")
GPU = dict(run="gpu", host="v100_resnet_ns_resolution")
F = "jit_f(12190760917235803885)"


def drawn(page) -> tuple[list[str], set[tuple[str, str]], str]:
    names = page.locator("#graph-svg g.graph-node").evaluate_all("gs => gs.map(g => g.dataset.node)")
    edges = page.locator("#graph-svg .graph-edge").evaluate_all("es => es.map(e => [e.dataset.source, e.dataset.target])")
    centre = page.locator('#graph-svg g.graph-node[data-centre="true"]').get_attribute("data-node")
    return names, {tuple(e) for e in edges}, centre


def test_graph_viewer_draws_the_apis_graph_and_recentres_on_a_click(page, server):
    expected = data(server, "graph_viewer", **TPU)
    # The default: jit_f's largest op, copy-done.4, 2 hops: param.2 -> copy-start.4 ->
    # copy-done.4 -> broadcast_add_fusion -> copy-start.5 (tests/analysis/tools/test_graph_viewer.py).
    assert expected["program"] == F and expected["op"] == "copy-done.4" and len(expected["nodes"]) == 5
    open_tool(page, server, "graph_viewer", **TPU)
    names, edges, centre = drawn(page)
    assert names == [n["name"] for n in expected["nodes"]]
    assert edges == {(e["source"], e["target"]) for e in expected["edges"]}
    assert centre == "copy-done.4"
    # copy-done.4 holds 24.8% of jit_f's op time: the 20-50% band; param.2 never ran: grey.
    fill = "name => document.querySelector(`#graph-svg g[data-node=\"${name}\"] rect`).getAttribute('fill')"
    assert page.evaluate(fill, "copy-done.4") == "#e53935"
    assert page.evaluate(fill, "param.2") == "#e0e0e0"
    assert page.locator("#graph-legend").count() == 1
    assert page.locator('table[data-table="nodes"] tbody tr').count() == 5
    shot(page, "graph_viewer_tpu")

    page.locator('#graph-svg g.graph-node[data-node="broadcast_add_fusion"]').click()
    page.wait_for_function("() => new URLSearchParams(location.search).get('op') === 'broadcast_add_fusion'")
    wait_ready(page, "graph_viewer")
    page.wait_for_function("() => document.querySelector('#graph-viewer')?.dataset.op === 'broadcast_add_fusion'")
    query = parse_qs(urlparse(page.url).query)
    assert query["op"] == ["broadcast_add_fusion"] and query["program"] == [F]
    after = data(server, "graph_viewer", **TPU, program=F, op="broadcast_add_fusion")
    names, edges, centre = drawn(page)
    assert centre == "broadcast_add_fusion"
    assert names == [n["name"] for n in after["nodes"]] and edges == {(e["source"], e["target"]) for e in after["edges"]}
    # Two hops from the fusion: copy-start.4 and copy-done.4 above it, copy-start.5 and
    # copy-done.5 below: five instructions, param.2 now three hops away.
    assert len(names) == 5 and "copy-done.5" in names and "param.2" not in names


def test_graph_viewer_of_a_profile_without_xla_programs_says_why(page, server):
    open_tool(page, server, "graph_viewer", **GPU)
    # A Kineto trace holds no HLO proto: the menu greys the tool out, and its page is the reason.
    assert page.locator("#tool-unavailable").inner_text() == f"Graph viewer: {applicability.NO_XLA_MODULES}."
    assert page.locator("#graph-svg").count() == 0


def test_a_new_program_clears_the_op_it_held(page, server):
    """The op names an instruction of one program: choosing another program in the options
    bar drops it from the address, and the page shows that program's own largest op."""
    open_tool(page, server, "graph_viewer", **TPU, program=F, op="copy-done.2")
    assert drawn(page)[2] == "copy-done.2"
    psum = "jit__psum(9646411105960254074)"
    page.locator('#tool-options select[name="option-program"]').select_option(psum)
    page.wait_for_function("name => new URLSearchParams(location.search).get('program') === name", arg=psum)
    wait_ready(page, "graph_viewer")
    page.wait_for_function("() => document.querySelector('#graph-viewer')?.dataset.op === 'all-reduce'")
    assert "op" not in parse_qs(urlparse(page.url).query)
    # psum's entry: param -> bitcast -> all-reduce, all within 2 hops of its only op.
    assert drawn(page)[:2] == (["param", "bitcast", "all-reduce"], {("param", "bitcast"), ("bitcast", "all-reduce")})
