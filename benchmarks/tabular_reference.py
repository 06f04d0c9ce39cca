"""A reference network for tables, in plain PyTorch: the design `task=tabular` is to copy.

benchmarks/tables.py measures it against LightGBM and a linear model. Three parts:

- `Preprocessor`: fitted on the training split only, its state a JSON-able dict (saved with the
  model). Numeric columns: missing values imputed with the training median plus a 0/1 indicator
  (for each column that had any missing value in training), then scaled robustly: (x - median)
  / (IQR / 1.349), clipped to +-`CLIP`. Categorical columns (strings, booleans, pandas
  categoricals): a vocabulary of the training values, index 0 for a value never seen in
  training (and for a missing one, unless missing was seen in training). Piecewise-linear
  encoding bins (quantiles of each numeric column on the training split) for the network's
  numeric embeddings. Target: classes indexed for classification; a regression target
  standardized (in log space on request: `log_target=True`, or `"auto"` for a positive target
  with skew > 1; off by default, as it cost RMSE on diamonds).
- `TabularNet`: categorical embeddings and numeric features (raw scaled values, or piecewise-
  linear encodings) concatenated into an MLP, plain or residual.
- `fit`: AdamW, a cosine schedule over the epochs chosen from the table's size, the weights of
  the best validation epoch kept, early stopping.
"""

from __future__ import annotations

import copy
import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import torch
from torch import nn

CLIP = 5.0  # scaled numeric values are clipped to +-CLIP
MAX_CLASSES = 20  # an integer target with at most this many distinct values is classification
UNSEEN = 0  # the embedding row of a category never seen in training
STEPS = 1500  # optimizer steps a training aims at (the epochs follow from the batches)
# Learning rate, dropout and AdamW's weight decay by the task: classification (log loss) overfit
# within a few epochs at the regression settings; regression (diamonds) lost 50% RMSE at the
# classification ones (benchmarks/RESULTS.md, section 25)
REGULARIZATION = {
    "regression": {"lr": 1e-3, "dropout": 0.1, "weight_decay": 1e-5},
    "classification": {"lr": 3e-4, "dropout": 0.3, "weight_decay": 1e-3},
}


def infer_task(y: pd.Series) -> str:
    """'classification' for a non-numeric target, or an integer one with few distinct values;
    'regression' for any other numeric target."""
    if not pd.api.types.is_numeric_dtype(y) or pd.api.types.is_bool_dtype(y):
        return "classification"
    values = y.dropna().to_numpy(dtype=float)
    integral = np.all(np.equal(np.mod(values, 1), 0))
    return "classification" if integral and len(np.unique(values)) <= MAX_CLASSES else "regression"


def is_categorical(column: pd.Series) -> bool:
    """Strings, booleans and pandas categoricals are categorical; every other column numeric."""
    return (
        isinstance(column.dtype, pd.CategoricalDtype)
        or pd.api.types.is_bool_dtype(column)
        or not pd.api.types.is_numeric_dtype(column)
    )


def embedding_dim(cardinality: int) -> int:
    """fastai's rule of thumb, capped: 1.6 * n^0.56, between 2 and 16."""
    return int(min(16, max(2, round(1.6 * cardinality**0.56))))


@dataclass
class Preprocessor:
    target: str
    task: str = ""
    numeric: list[str] = field(default_factory=list)
    categorical: list[str] = field(default_factory=list)
    median: list[float] = field(default_factory=list)
    scale: list[float] = field(default_factory=list)
    with_indicator: list[str] = field(default_factory=list)  # numeric columns missing in training
    vocab: dict[str, list[str]] = field(default_factory=dict)  # index i+1 holds vocab[i]
    classes: list[str] = field(default_factory=list)
    log_target: bool = False
    y_mean: float = 0.0
    y_std: float = 1.0
    bins: list[list[float]] = field(default_factory=list)  # piecewise-linear encoding edges

    @classmethod
    def fit(
        cls, train: pd.DataFrame, target: str, *, log_target: str | bool = False, n_bins: int = 32
    ) -> Preprocessor:
        p = cls(target=target, task=infer_task(train[target]))
        features = train.drop(columns=[target])
        for name in features.columns:
            (p.categorical if is_categorical(features[name]) else p.numeric).append(name)
        for name in p.numeric:
            x = features[name].to_numpy(dtype=float)
            seen = x[~np.isnan(x)]
            median = float(np.median(seen)) if len(seen) else 0.0
            q1, q3 = np.percentile(seen, [25, 75]) if len(seen) else (0.0, 0.0)
            scale = (q3 - q1) / 1.349
            if not scale > 0:
                scale = float(np.std(seen)) if len(seen) else 1.0
            p.median.append(median)
            p.scale.append(float(scale) if scale > 0 else 1.0)
            if np.isnan(x).any():
                p.with_indicator.append(name)
            edges = np.unique(np.quantile(seen, np.linspace(0, 1, n_bins + 1))) if len(seen) else []
            p.bins.append([float(e) for e in edges])
        for name in p.categorical:
            values = _as_text(features[name])
            p.vocab[name] = sorted(values.dropna().unique().tolist()) + (
                ["<missing>"] if values.isna().any() else []
            )
        y = train[target]
        if p.task == "classification":
            p.classes = sorted(_as_text(y).dropna().unique().tolist())
        else:
            values = y.to_numpy(dtype=float)
            if log_target == "auto":
                log_target = bool(values.min() > 0 and pd.Series(values).skew() > 1.0)
            p.log_target = bool(log_target)
            values = np.log(values) if p.log_target else values
            p.y_mean, p.y_std = float(values.mean()), float(values.std() or 1.0)
        return p

    # ---- features ----

    def numeric_array(self, df: pd.DataFrame) -> np.ndarray:
        """(n, numeric + indicators) float32: scaled, clipped, imputed; then 0/1 indicators."""
        columns, indicators = [], []
        for name, median, scale in zip(self.numeric, self.median, self.scale, strict=True):
            x = df[name].to_numpy(dtype=float)
            missing = np.isnan(x)
            columns.append(np.clip((np.where(missing, median, x) - median) / scale, -CLIP, CLIP))
            if name in self.with_indicator:
                indicators.append(missing.astype(float))
        out = np.stack(columns + indicators, axis=1) if columns else np.zeros((len(df), 0))
        return out.astype(np.float32)

    def raw_numeric(self, df: pd.DataFrame) -> np.ndarray:
        """(n, numeric) float32, imputed with the median but not scaled (for the bins)."""
        if not self.numeric:
            return np.zeros((len(df), 0), dtype=np.float32)
        x = df[self.numeric].to_numpy(dtype=float)
        return np.where(np.isnan(x), np.array(self.median), x).astype(np.float32)

    def categorical_array(self, df: pd.DataFrame) -> np.ndarray:
        """(n, categorical) int64: 1 + the value's index in the vocabulary, 0 when unseen."""
        columns = []
        for name in self.categorical:
            index = {v: i + 1 for i, v in enumerate(self.vocab[name])}
            values = _as_text(df[name]).fillna("<missing>")
            columns.append(np.array(values.map(index).fillna(UNSEEN), dtype=np.int64))
        return np.stack(columns, axis=1) if columns else np.zeros((len(df), 0), dtype=np.int64)

    def one_hot(self, df: pd.DataFrame) -> np.ndarray:
        """The linear model's inputs: numeric_array plus a one-hot column per vocabulary entry
        (an unseen value is all zeros)."""
        cats = self.categorical_array(df)
        blocks = [self.numeric_array(df)]
        for j, name in enumerate(self.categorical):
            eye = np.eye(len(self.vocab[name]) + 1, dtype=np.float32)[:, 1:]
            blocks.append(eye[cats[:, j]])
        return np.concatenate(blocks, axis=1)

    @property
    def cardinalities(self) -> list[int]:
        return [len(self.vocab[name]) + 1 for name in self.categorical]  # + the unseen slot

    @property
    def n_numeric_inputs(self) -> int:
        return len(self.numeric) + len(self.with_indicator)

    # ---- target ----

    def encode_target(self, y: pd.Series) -> np.ndarray:
        if self.task == "classification":
            index = {c: i for i, c in enumerate(self.classes)}
            codes = _as_text(y).map(index).fillna(-100)  # -100: ignored by the loss
            return np.array(codes, dtype=np.int64)
        values = y.to_numpy(dtype=float)
        values = np.log(values) if self.log_target else values
        return ((values - self.y_mean) / self.y_std).astype(np.float32)

    def decode_target(self, out: np.ndarray) -> np.ndarray:
        """Predictions in the target's own units (regression) or class indices."""
        if self.task == "classification":
            return out.argmax(axis=1)
        values = out.reshape(-1) * self.y_std + self.y_mean
        return np.exp(values) if self.log_target else values

    @property
    def n_outputs(self) -> int:
        return len(self.classes) if self.task == "classification" else 1

    def state_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _as_text(column: pd.Series) -> pd.Series:
    """Values as strings (booleans and numbers too), missing ones left missing."""
    return (
        column.astype(object)
        .where(column.notna())
        .map(lambda v: v if v is None or isinstance(v, str) else str(v), na_action="ignore")
    )


# ---- the network ------------------------------------------------------------------------------


class PiecewiseLinear(nn.Module):
    """Piecewise-linear encoding of each numeric feature over its training quantile bins
    (Gorishniy et al. 2022, "On embeddings for numerical features"), then a per-feature linear
    layer to `dim` and a ReLU: (n, features) -> (n, features * dim)."""

    def __init__(self, bins: list[list[float]], dim: int) -> None:
        super().__init__()
        n_bins = max(1, max(len(b) - 1 for b in bins))
        left = torch.zeros(len(bins), n_bins)
        width = torch.ones(len(bins), n_bins)
        mask = torch.zeros(len(bins), n_bins)
        for j, edges in enumerate(bins):
            e = torch.tensor(edges, dtype=torch.float32)
            k = len(edges) - 1
            if k >= 1:
                left[j, :k], width[j, :k], mask[j, :k] = e[:-1], (e[1:] - e[:-1]).clamp_min(1e-9), 1
        self.register_buffer("left", left)
        self.register_buffer("width", width)
        self.register_buffer("mask", mask)
        last = mask.sum(1).long().clamp_min(1) - 1  # each feature's last real bin
        first = torch.zeros_like(mask)
        first[:, 0] = 1
        lastm = torch.zeros_like(mask).scatter_(1, last[:, None], 1)
        self.register_buffer("first", first)
        self.register_buffer("last", lastm)
        self.weight = nn.Parameter(torch.randn(len(bins), n_bins, dim) / math.sqrt(n_bins))
        self.bias = nn.Parameter(torch.zeros(len(bins), dim))

    def encode(self, x: torch.Tensor) -> torch.Tensor:
        t = (x[:, :, None] - self.left) / self.width  # (n, features, bins)
        # inner bins in [0, 1]; the first bin open below, the last open above
        low = torch.where(self.first.bool(), torch.full_like(t, -math.inf), torch.zeros_like(t))
        high = torch.where(self.last.bool(), torch.full_like(t, math.inf), torch.ones_like(t))
        return torch.maximum(torch.minimum(t, high), low) * self.mask

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        z = torch.einsum("nfb,fbd->nfd", self.encode(x), self.weight) + self.bias
        return torch.relu(z).flatten(1)


class ResidualBlock(nn.Module):
    def __init__(self, width: int, dropout: float) -> None:
        super().__init__()
        self.body = nn.Sequential(
            nn.LayerNorm(width), nn.Linear(width, 2 * width), nn.ReLU(), nn.Dropout(dropout),
            nn.Linear(2 * width, width), nn.Dropout(dropout),
        )  # fmt: skip

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.body(x)


class TabularNet(nn.Module):
    """Embeddings of the categorical columns, the numeric ones as they are (scaled) or
    piecewise-linear embedded, concatenated, then an MLP (plain or residual) to the outputs."""

    def __init__(
        self,
        pre: Preprocessor,
        *,
        width: int = 256,
        depth: int = 3,
        dropout: float = 0.1,
        residual: bool = False,
        numeric_embedding: str = "ple",  # "ple" | "none"
        ple_dim: int = 8,
    ) -> None:
        super().__init__()
        self.embeddings = nn.ModuleList(
            nn.Embedding(n, embedding_dim(n)) for n in pre.cardinalities
        )
        self.n_numeric = len(pre.numeric)
        self.ple = PiecewiseLinear(pre.bins, ple_dim) if numeric_embedding == "ple" else None
        size = sum(e.embedding_dim for e in self.embeddings) + pre.n_numeric_inputs
        if self.ple is not None:
            size += self.n_numeric * ple_dim
        if residual:
            blocks = [nn.Linear(size, width)]
            blocks += [ResidualBlock(width, dropout) for _ in range(depth)]
            blocks += [nn.LayerNorm(width), nn.ReLU()]
        else:
            blocks, d = [], size
            for _ in range(depth):
                blocks += [nn.Linear(d, width), nn.ReLU(), nn.Dropout(dropout)]
                d = width
        self.body = nn.Sequential(*blocks)
        self.head = nn.Linear(width, pre.n_outputs)

    def forward(
        self, x_num: torch.Tensor, x_cat: torch.Tensor, x_raw: torch.Tensor
    ) -> torch.Tensor:
        parts = [x_num] + [e(x_cat[:, j]) for j, e in enumerate(self.embeddings)]
        if self.ple is not None:
            parts.append(self.ple(x_raw))
        return self.head(self.body(torch.cat(parts, dim=1)))


# ---- sizes from the table, and training -------------------------------------------------------


def defaults_for(n_train: int) -> dict[str, int]:
    """Batch size and epochs from the training split's size: batches of about n/32 (64 to 1024,
    a power of two), epochs for about STEPS optimizer steps (10 to 100), and early stopping's
    patience a third of them (at least 10): the cosine schedule's last epochs are its best."""
    batch = int(min(1024, max(64, 2 ** round(math.log2(max(1, n_train / 32))))))
    steps_per_epoch = max(1, n_train // batch)
    epochs = int(min(100, max(10, math.ceil(STEPS / steps_per_epoch))))
    return {"batch_size": batch, "epochs": epochs, "patience": max(10, epochs // 3)}


@dataclass
class Split:
    num: torch.Tensor
    cat: torch.Tensor
    raw: torch.Tensor
    y: torch.Tensor

    @classmethod
    def of(cls, pre: Preprocessor, df: pd.DataFrame) -> Split:
        return cls(
            torch.from_numpy(pre.numeric_array(df)),
            torch.from_numpy(pre.categorical_array(df)),
            torch.from_numpy(pre.raw_numeric(df)),
            torch.from_numpy(pre.encode_target(df[pre.target])),
        )

    def __len__(self) -> int:
        return len(self.y)


def predict(model: TabularNet, data: Split, batch: int = 4096) -> np.ndarray:
    model.eval()
    outs = []
    with torch.inference_mode():
        for i in range(0, len(data), batch):
            s = slice(i, i + batch)
            outs.append(model(data.num[s], data.cat[s], data.raw[s]))
    return torch.cat(outs).numpy()


def score(pre: Preprocessor, out: np.ndarray, y: pd.Series) -> float:
    """RMSE in the target's units (regression) or accuracy (classification)."""
    pred = pre.decode_target(out)
    if pre.task == "classification":
        truth = pre.encode_target(y)
        return float(np.mean(pred == truth))
    return float(np.sqrt(np.mean((pred - y.to_numpy(dtype=float)) ** 2)))


def fit(
    train: pd.DataFrame,
    val: pd.DataFrame,
    target: str,
    *,
    seed: int = 0,
    lr: float | None = None,
    weight_decay: float | None = None,
    dropout: float | None = None,
    max_epochs: int | None = None,
    log_target: str | bool = False,
    patience: int | None = None,
    **model_args: Any,
) -> tuple[Preprocessor, TabularNet, dict[str, Any]]:
    """The preprocessing fitted on `train`, the network trained on it; the epoch with the best
    validation score is kept (RMSE in the target's units, or log loss), stopping after
    `patience` epochs without improvement."""
    start = time.perf_counter()
    torch.manual_seed(seed)
    pre = Preprocessor.fit(train, target, log_target=log_target)
    tr, va = Split.of(pre, train), Split.of(pre, val)
    sizes = defaults_for(len(tr))
    epochs = max_epochs or sizes["epochs"]
    batch = min(sizes["batch_size"], len(tr))
    classify = pre.task == "classification"
    if dropout is None:  # by the task: see REGULARIZATION
        dropout = REGULARIZATION[pre.task]["dropout"]
    if weight_decay is None:
        weight_decay = REGULARIZATION[pre.task]["weight_decay"]
    if lr is None:
        lr = REGULARIZATION[pre.task]["lr"]
    model = TabularNet(pre, dropout=dropout, **model_args)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=weight_decay)
    steps = epochs * max(1, len(tr) // batch)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: 0.5 * (1 + math.cos(math.pi * min(s, steps) / steps))
    )
    loss_fn = nn.CrossEntropyLoss() if classify else nn.MSELoss()
    generator = torch.Generator().manual_seed(seed)
    best, best_state, best_epoch, epoch = math.inf, None, -1, 0
    for epoch in range(epochs):
        model.train()
        order = torch.randperm(len(tr), generator=generator)
        for i in range(0, len(tr) - batch + 1, batch):  # whole batches only
            idx = order[i : i + batch]
            out = model(tr.num[idx], tr.cat[idx], tr.raw[idx])
            loss = loss_fn(out, tr.y[idx]) if classify else loss_fn(out.squeeze(1), tr.y[idx])
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            schedule.step()
        out = predict(model, va)
        if classify:
            value = float(loss_fn(torch.from_numpy(out), va.y))
        else:
            value = score(pre, out, val[target])
        if value < best:
            best, best_epoch = value, epoch
            best_state = copy.deepcopy(model.state_dict())
        elif epoch - best_epoch >= (patience or sizes["patience"]):
            break
    if best_state is not None:
        model.load_state_dict(best_state)
    info = dict(sizes, epochs_run=epoch + 1, best_epoch=best_epoch + 1, batch=batch,
                seconds=time.perf_counter() - start)  # fmt: skip
    return pre, model, info
