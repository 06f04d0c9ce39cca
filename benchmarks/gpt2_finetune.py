"""15. Fine-tuning a GPT-2 folder: the project's loop against transformers' GPT2LMHeadModel.

    python benchmarks/gpt2_finetune.py [--tiny] [--work DIR]

A GPT-2-shaped model (12 layers, 12 heads, 768 wide, 1,024 positions; random weights, since
nothing is downloaded) and a byte-level BPE trained on real text are saved with
`save_pretrained`, as a real GPT-2 folder is. The text is `benchmarks.corpus.write_real_corpus`:
the text files that the standard library and the installed packages ship, non-ASCII included.
The project's `prepare TEXT tokenizer=FOLDER` encodes it once; both contenders train on those
tokens, each run in a fresh interpreter, interleaved:

- transformers: `GPT2LMHeadModel.from_pretrained(FOLDER)`, train mode, AdamW (the project's
  default lr, betas and weight decay on every parameter), the loss of its logits against the next
  tokens, gradients clipped at 1.0, on random windows of the tokens: the loop a person writes.
- project: the generated `train` (`main`, as its command runs) with `model.init_from=FOLDER
  data.source=PREPARED`, the batch and context below, everything else at its defaults.

tokens/s = batch x context / the timed window's seconds per step (`common.StepClock`: start-up
and the first steps fall outside it).
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `benchmarks` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import common

TARGET = 1.0
CONTENDERS = ["transformers", "project"]
# The model's shape, the text and tokenizer, and each run: batch x context, warm-up and timed steps
FULL = {"n_layer": 12, "n_head": 12, "n_embd": 768, "n_positions": 1024, "vocab": 50257,
        "text_mb": 4, "batch": 2, "block": 64, "warmup": 2, "window": 10, "repeats": 3}  # fmt: skip
TINY = {"n_layer": 2, "n_head": 2, "n_embd": 32, "n_positions": 64, "vocab": 512,
        "text_mb": 1, "batch": 2, "block": 16, "warmup": 1, "window": 3, "repeats": 1}  # fmt: skip
LR, BETAS, WEIGHT_DECAY, GRAD_CLIP = 2e-3, (0.9, 0.99), 0.05, 1.0  # the project's defaults


def missing() -> list[str]:
    return [
        name
        for name in ("transformers", "tokenizers", "safetensors")
        if not common.has_module(name)
    ]


def run(work: Path, quick: bool) -> common.Section:
    title = "15. Fine-tuning a GPT-2 folder"
    target = (
        f"the project's loop fine-tunes a GPT-2-shaped model at >= {TARGET}x transformers' tokens/s"
    )
    columns = ["Loop", "tokens/s", "ratio", "ratio, middle half", "threads"]
    lacking = missing()
    if lacking:
        return common.Section(
            title, target, columns, [], {}, None, [f"Not measured: pip install {' '.join(lacking)}"]
        )
    sizes = TINY if quick else FULL
    folder, text = build_gpt2(work / f"gpt2-{sizes['n_layer']}x{sizes['n_embd']}", sizes)
    project, package = common.render(work, "language_model")
    prepared = work / f"prepared-{folder.name}"
    if not prepared.exists():
        command = [
            sys.executable,
            "-m",
            f"{package}.prepare",
            str(text),
            f"out={prepared}",
            f"tokenizer={folder}",
        ]
        subprocess.run(
            command, cwd=project, env=_with_src(project), check=True, capture_output=True
        )
    spec = dict(
        work=str(work),
        project=str(project),
        package=package,
        folder=str(folder),
        prepared=str(prepared),
    )
    spec |= {key: sizes[key] for key in ("batch", "block", "warmup", "window")}
    results = common.compare("gpt2_finetune", spec, CONTENDERS, sizes["repeats"], fresh=True)
    ratios = common.paired(results, "tokens_per_s", "project", "transformers")
    ratio = statistics.median(ratios)
    rows = []
    for who in CONTENDERS:
        threads = ", ".join(sorted({f"{r['threads']:.0f}" for r in results[who]}))
        rows.append([who, common.fmt(common.median(results[who], "tokens_per_s"), 1),
                     common.fmt(ratio if who == "project" else 1.0, 3),
                     common.middle_half(ratios) if who == "project" else "-", threads])  # fmt: skip
    meta = json.loads((folder / "config.json").read_text())
    notes = [
        f"Model: GPT-2's architecture from `transformers.GPT2Config` ({meta['n_layer']} layers, "
        f"{meta['n_head']} heads, {meta['n_embd']} wide, {meta['n_positions']} positions, a "
        f"vocabulary of {meta['vocab_size']:,}: {_parameters(meta) / 1e6:.1f} M parameters), "
        "random weights saved with `save_pretrained` (model.safetensors), and a byte-level BPE "
        f"trained with `tokenizers` on {sizes['text_mb']} MiB of real text "
        "(`benchmarks.corpus.write_real_corpus`).",
        f"Each run: batch {sizes['batch']} x context {sizes['block']} tokens, {sizes['window']} "
        f"steps timed after {sizes['warmup']}, in a fresh interpreter; {sizes['repeats']} "
        "interleaved run(s) per contender. ratio = project / transformers in the same round, "
        "median over the rounds. Both train with dropout 0.1 (GPT-2's and the project's "
        f"default), AdamW (lr {LR:g}, betas {BETAS}), clipping at {GRAD_CLIP}; transformers' "
        "attention is its default (scaled_dot_product_attention).",
        common.load_note(results),
    ]
    figures = {"ratio": ratio} | {
        f"{who}_tokens_per_s": common.median(results[who], "tokens_per_s") for who in CONTENDERS
    }
    return common.Section(title, target, columns, rows, figures, ratio >= TARGET, notes)


def _parameters(config: dict[str, Any]) -> int:
    """GPT-2's parameter count (the head tied to the token embedding)."""
    c, layers = config["n_embd"], config["n_layer"]
    block = 12 * c * c + 13 * c  # attention 4 c^2 + 4 c, MLP 8 c^2 + 5 c, two LayerNorms 4 c
    return (config["vocab_size"] + config["n_positions"]) * c + layers * block + 2 * c


def _with_src(project: Path) -> dict[str, str]:
    import os

    return {**os.environ, "PYTHONPATH": str(project / "src")}


def build_gpt2(folder: Path, sizes: dict[str, int]) -> tuple[Path, Path]:
    """A random GPT-2 of `sizes`' shape and a BPE trained on real text, saved as save_pretrained
    saves them, once per work folder; and the text."""
    from benchmarks.corpus import write_real_corpus

    text = folder.parent / f"real-{sizes['text_mb']}MiB.txt"
    write_real_corpus(text, sizes["text_mb"] << 20)
    if (folder / "model.safetensors").exists():
        return folder, text
    import torch
    import transformers
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=sizes["vocab"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        special_tokens=["<|endoftext|>"],
        show_progress=False,
    )
    bpe.train([str(text)], trainer=trainer)
    partial = folder.with_name(folder.name + ".partial")
    transformers.GPT2TokenizerFast(tokenizer_object=bpe, eos_token="<|endoftext|>").save_pretrained(
        partial
    )
    config = transformers.GPT2Config(
        vocab_size=bpe.get_vocab_size(),
        n_positions=sizes["n_positions"],
        n_embd=sizes["n_embd"],
        n_layer=sizes["n_layer"],
        n_head=sizes["n_head"],
        bos_token_id=0,
        eos_token_id=0,
    )
    torch.manual_seed(0)
    transformers.GPT2LMHeadModel(config).save_pretrained(partial)
    partial.replace(folder)
    return folder, text


# ---- worker: one measurement in a fresh interpreter ------------------------------------------


def measure(spec: dict[str, Any]) -> dict[str, Any]:
    import torch

    clock = common.StepClock(spec["warmup"], spec["window"])
    if spec["contender"] == "project":
        project = common.import_project(spec)
        args = [
            f"model.init_from={spec['folder']}",
            f"data.source={spec['prepared']}",
            f"data.batch_size={spec['batch']}",
            f"data.block_size={spec['block']}",
            "epochs=1",
            f"max_steps={clock.steps_needed}",
            "val_batches=1",  # the evaluation after the loop, outside the window: kept short
            f"runs_dir={Path(spec['work']) / 'runs'}",
            f"run_name={spec['contender']}-{Path(spec['out']).stem}",
        ]
        common.run_generated(project, args, clock)
    else:
        transformers_loop(spec, clock)
    tokens = spec["batch"] * spec["block"]
    return {"tokens_per_s": tokens / clock.seconds_per_step(), "threads": torch.get_num_threads()}


def transformers_loop(spec: dict[str, Any], clock: common.StepClock) -> None:
    """The plain loop: GPT2LMHeadModel from the folder, AdamW, random windows of the tokens."""
    import numpy as np
    import torch
    import transformers

    torch.manual_seed(0)
    meta = json.loads((Path(spec["prepared"]) / "meta.json").read_text())
    tokens = np.memmap(
        Path(spec["prepared"]) / "train.bin", dtype=np.dtype(meta["dtype"]), mode="r"
    )
    model = transformers.GPT2LMHeadModel.from_pretrained(spec["folder"]).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=LR, betas=BETAS, weight_decay=WEIGHT_DECAY)
    batch, block = spec["batch"], spec["block"]
    for _ in range(clock.steps_needed):
        starts = torch.randint(0, len(tokens) - block - 1, (batch,)).tolist()
        window = torch.from_numpy(
            np.stack([tokens[s : s + block + 1] for s in starts]).astype(np.int64)
        )
        x, y = window[:, :-1], window[:, 1:]  # (B, T) each
        clock.tick()
        logits = model(input_ids=x).logits  # (B, T, V)
        loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1), y.flatten())
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), GRAD_CLIP)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)


def main() -> None:
    common.script_main(__doc__, run, "gpt2")


if __name__ == "__main__":
    if len(sys.argv) == 2 and sys.argv[1].startswith("{"):  # a worker: python -m ... SPEC_JSON
        common.worker_main(measure)
    else:
        main()
