"""10. What a checkpoint save costs the training: synchronous vs ckpt_async=true (FSDP, DCP).

A language model sharded by FSDP2 trains a fixed number of steps three ways: saving only at the
end, and saving every few steps too, synchronously and asynchronously. A save's cost is the extra
wall time per extra save over the run that saves only at the end; the figure is async's cost over
sync's.

    python benchmarks/ckpt_save.py          # on CUDA GPUs: one rank per GPU (nccl), ~340M params
    python benchmarks/ckpt_save.py --tiny   # anywhere: 2 CPU processes (gloo), a tiny model

On a CPU the ranks are 2 processes over gloo. On GPUs the shards are staged into pinned host
memory before the background write (see the generated checkpoint.host_stager); that path, and
nccl, exist only there.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make `benchmarks` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import common

TARGET_RATIO = 0.5  # an asynchronous save costs the loop at most half of a synchronous one
CONTENDERS = {"none": [], "sync": ["ckpt_async=false"], "async": ["ckpt_async=true"]}


def train_seconds(
    project: Path, package: str, args: list[str], runs_dir: Path, ranks: int
) -> float:
    env = {**os.environ, "PYTHONPATH": str(project / "src"), "OMP_NUM_THREADS": "1"}
    command = [
        *(sys.executable, "-m", "torch.distributed.run", "--standalone"),
        f"--nproc_per_node={ranks}",
    ]
    start = time.perf_counter()
    proc = subprocess.run(
        [*command, "-m", f"{package}.train", *args, f"runs_dir={runs_dir}"],
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    if proc.returncode != 0:
        raise common.BenchmarkError(proc.stderr[-3000:])
    return time.perf_counter() - start


def run(work: Path, quick: bool) -> common.Section:
    import torch

    gpus = 0 if quick else torch.cuda.device_count()
    ranks = gpus or 2
    project, package = common.render(work, "language_model", "bench_ckpt", distributed="fsdp")
    # A few optimizer steps between saves; the run saves twice more than the end-only one
    if quick:
        width, layers, steps, every, repeats = 32, 1, 6, 2, 1
    elif gpus:
        width, layers, steps, every, repeats = 1536, 12, 12, 4, 1
    else:
        width, layers, steps, every, repeats = 768, 6, 12, 4, 1
    base = [
        f"model.n_embd={width}",
        f"model.n_layer={layers}",
        "model.n_head=4",
        "data.batch_size=2",
        "data.block_size=32",
        f"max_steps={steps}",
        "epochs=100",
        "threads=1",
        "data.num_workers=0",
        "log_interval=1",
        "keep_last=1",
    ]
    times: dict[str, list[float]] = {name: [] for name in CONTENDERS}
    common.wait_for_quiet()
    for repeat in range(repeats):
        for name, extra in CONTENDERS.items():
            interval = [] if name == "none" else [f"ckpt_interval={every}"]
            runs = work / f"ckpt-runs-{name}-{repeat}"
            args = [*base, *interval, *extra, f"device={'cuda' if gpus else 'cpu'}"]
            times[name].append(train_seconds(project, package, args, runs, ranks))
    extra_saves = steps // every - 1
    wall = {name: min(values) for name, values in times.items()}
    cost = {name: (wall[name] - wall["none"]) / extra_saves for name in ("sync", "async")}
    ratio = cost["async"] / cost["sync"] if cost["sync"] > 0 else float("nan")
    params = 12 * layers * width * width
    where = f"GPUs ({torch.cuda.get_device_name()}, nccl)" if gpus else "CPU processes (gloo)"
    rows = [[name, common.fmt(wall[name]), common.fmt(cost.get(name, 0.0))] for name in CONTENDERS]
    return common.Section(
        title="10. Checkpoint save cost (FSDP, DCP)",
        target=f"an asynchronous save costs the loop <= {TARGET_RATIO:.1f}x a synchronous one",
        columns=["Saves", "Run wall s (best of repeats)", "Cost per save s"],
        rows=rows,
        figures={"sync_save_s": cost["sync"], "async_save_s": cost["async"], "ratio": ratio},
        met=ratio <= TARGET_RATIO if cost["sync"] >= 1.0 else None,
        notes=[
            f"About {params / 1e6:.0f}M transformer parameters (plus embeddings) with AdamW,",
            f"sharded over {ranks} {where}; {steps} steps, a save every {every} (sync,",
            f"async) or only at the end (none). Cost per save: (run - none) / {extra_saves};",
            f"ratio async/sync = {common.fmt(ratio)}.",
        ],
    )


if __name__ == "__main__":
    common.script_main(__doc__, run, "ckpt")
