"""What counts as which activity: collectives by name, step markers as no activity."""

from __future__ import annotations

import re
import time

import numpy as np
import pytest

import stepscope
from stepscope.analysis import run_tool
from stepscope.analysis.steps.classify import COLLECTIVE, Activity, _device_type_activity


@pytest.mark.parametrize(
    ("name", "activity"),
    [
        ("all-reduce.1", Activity.DEVICE_COLLECTIVES),
        ("all-gather-start.3", Activity.DEVICE_COLLECTIVES),
        ("collective-permute-done", Activity.DEVICE_COLLECTIVES),
        ("ncclDevKernel_Broadcast_RING_LL(ncclDevComm*, unsigned long, ncclWork*)", Activity.DEVICE_COLLECTIVES),
        ("ncclKernel_AllReduce_RING_LL_Sum_float", Activity.DEVICE_COLLECTIVES),
        # XLA's broadcast is a shape operation on one device, not communication.
        ("broadcast.2", Activity.DEVICE_COMPUTE),
        ("broadcast_add_fusion.1", Activity.DEVICE_COMPUTE),
    ],
)
def test_collectives_by_name(name, activity):
    assert _device_type_activity(name, "") == activity


# XLA's data movement, by the HLO text XProf writes as the op's name. A copy-start's result
# and a copy-done's operand are the tuple (destination, source, context); S(5) in a layout
# is XLA's host memory space, S(1) another device memory space (on-chip).
HOST = "f32[8]{0:T(8)S(5)}"
HBM = "f32[8]{0:T(8)}"
ON_CHIP = "f32[8]{0:S(1)}"


@pytest.mark.parametrize(
    ("name", "hlo_category", "activity"),
    [
        # Source in host memory, destination on the device: a prefetch of offloaded data.
        (f"%copy-start.2 = ({HBM}, {HOST}, u32[]{{:S(2)}}) copy-start({HOST} %param)", "copy-start", Activity.HOST_TO_DEVICE),
        (f"%copy-done.2 = {HBM} copy-done(({HBM}, {HOST}, u32[]{{:S(2)}}) %copy-start.2)", "copy-done", Activity.HOST_TO_DEVICE),
        # Destination in host memory: an offload.
        (f"%copy-start.1 = ({HOST}, {HBM}, u32[]) copy-start({HBM} %x)", "copy-start", Activity.DEVICE_TO_HOST),
        (f"%copy-done.1 = {HOST} copy-done(({HOST}, {HBM}, u32[]) %copy-start.1)", "", Activity.DEVICE_TO_HOST),
        # Between device memory spaces (memory-space assignment's prefetch), or no layout.
        (f"%copy-start.3 = ({ON_CHIP}, {HBM}, u32[]) copy-start({HBM} %y)", "copy-start", Activity.DEVICE_TO_DEVICE),
        ("copy-start.1", "", Activity.DEVICE_TO_DEVICE),
        ("copy-done", "", Activity.DEVICE_TO_DEVICE),
        # Point to point between devices; to and from the host where is_host_transfer=true.
        ("%send.1 = (f32[8]{0}, u32[], token[]) send(f32[8]{0} %p, token[] %t), channel_id=1", "", Activity.DEVICE_TO_DEVICE),
        ("recv-done.4", "", Activity.DEVICE_TO_DEVICE),
        ("%send.2 = (f32[8]{0}, u32[], token[]) send(f32[8]{0} %p, token[] %t), channel_id=2, is_host_transfer=true", "", Activity.DEVICE_TO_HOST),
        ("%recv.2 = (f32[8]{0}, u32[], token[]) recv(token[] %t), channel_id=3, is_host_transfer=true", "", Activity.HOST_TO_DEVICE),
        ("infeed.1", "", Activity.HOST_TO_DEVICE),
        ("%outfeed = token[] outfeed(f32[8]{0} %p, token[] %t)", "", Activity.DEVICE_TO_HOST),
        # A synchronous copy is a kernel (a transpose, a layout change): compute.
        (f"%copy.5 = {HBM} copy({HBM} %z)", "copy", Activity.DEVICE_COMPUTE),
        # The hlo_category stat decides over a short name.
        ("fusion.7", "loop fusion", Activity.DEVICE_COMPUTE),
    ],
)
def test_xla_data_movement_is_a_copy_with_its_direction(name, hlo_category, activity):
    assert _device_type_activity(name, "", hlo_category) == activity


def test_a_step_marker_is_not_host_compute(tmp_path):
    """A step of 'work' then a sleep: host compute is the work event, the rest is idle."""
    with stepscope.profile(tmp_path) as session:
        for number in range(2):
            with stepscope.step(number):
                with stepscope.trace("work"):
                    time.sleep(0.02)
                time.sleep(0.02)
    profile = stepscope.load(session.path)
    host = profile.plane("/host:CPU")
    names = host.metadata.name_array[host.events.metadata_id]
    work = np.sort(host.events.start_ps[names == "work"]), host.events.duration_ps[names == "work"][np.argsort(host.events.start_ps[names == "work"])]
    overview = run_tool("overview_page", profile).to_json()
    assert [step["step"] for step in overview["steps"]] == [0, 1]
    for step, duration in zip(overview["steps"], work[1]):
        breakdown = step["breakdown"]
        assert breakdown["host_compute_ps"] == duration
        assert breakdown["idle_ps"] == step["step_time_ps"] - duration


def test_collective_pattern_matches_exactly_the_plain_alternation() -> None:
    # COLLECTIVE carries a lookahead on the alternatives' first letters for speed; it must
    # match where the bare alternation (written out here) does, at the same span.
    plain = re.compile(
        r"nccl|rccl|all[-_]?reduce|all[-_]?gather|reduce[-_]?scatter|all[-_]?to[-_]?all|collective[-_]?permute|collective[-_]?broadcast|SendRecv",
        re.IGNORECASE,
    )
    names = [
        "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>(int, at::native::FillFunctor<float>)",
        "x_NCCLKernel_AllReduce",
        "RCCL_all_gather",
        "xla::ALLTOALL.2",
        "fusion.reduce-scatter.7",
        "Collective_Broadcast",
        "cross_entropy_sendrecv",
        "all reduce",  # a space is no separator: no match
        "\u017fendrecv",  # LATIN SMALL LETTER LONG S folds to 's' under IGNORECASE
        "",
    ]

    def spans(pattern: re.Pattern[str]) -> list[tuple[int, int] | None]:
        return [match.span() if (match := pattern.search(name)) else None for name in names]

    found = spans(COLLECTIVE)
    assert found == spans(plain)
    # By hand: no match, then the spans of "NCCL", "RCCL", "ALLTOALL", "reduce-scatter",
    # "Collective_Broadcast", "sendrecv", none, long-s "sendrecv", none.
    assert found == [None, (2, 6), (0, 4), (5, 13), (7, 21), (0, 20), (14, 22), None, (0, 8), None]
