"""Issue 26.6: fewer, larger calls on a cluster, and enough of them for every worker."""

from __future__ import annotations

from precision_tool.compare.jobs import CLUSTER_BATCH_BYTES, batch_jobs, cluster_batch_bytes


def test_calls_are_at_most_64_mib_and_about_four_per_worker_thread():
    assert cluster_batch_bytes(1 << 40, 256) == CLUSTER_BATCH_BYTES == 64 << 20  # a big run: 64 MiB calls
    assert cluster_batch_bytes(800_000, 1) == 200_000  # a small one: four calls for the one worker
    assert cluster_batch_bytes(800_000, 2) == 100_000
    assert cluster_batch_bytes(3, 8) == 1 and cluster_batch_bytes(0, 0) == 1  # each job alone


def test_small_jobs_join_into_calls_of_the_batch_size_in_order():
    from pathlib import Path

    sizes = {Path(f"f{k}"): 100 for k in range(10)}
    jobs = [[type("T", (), {"comparable": True, "left": None, "right": None})()] for _ in range(10)]
    for job, name in zip(jobs, sizes):  # one file of 100 bytes per job
        job[0].left = job[0].right = _side(name)
    batched = batch_jobs(jobs, sizes, 250)
    assert [len(call) for call in batched] == [2, 2, 2, 2, 2]
    assert [task for call in batched for task in call] == [job[0] for job in jobs]


def _side(name):
    from pathlib import Path

    from precision_tool.compare.golden_pairing import NpySide

    return NpySide(Path(name))
