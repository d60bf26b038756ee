"""How much of a statement its passages hold in meaning, token by token: each statement token's
best cosine among a passage's tokens, with the bundled MiniLM's token vectors (BERTScore's
greedy matching, Zhang et al. 2020; MTRAG's strongest faithfulness signal, K-Precision).

The vectors are all-MiniLM-L6-v2 int8's `last_hidden_state` (384 wide, one per word piece), read
with onnxruntime from the folder search/dense.py assembles; nothing is downloaded. A text longer
than the model's 256 word pieces is read in overlapping windows and every window's tokens count.
[CLS], [SEP] and padding are left out; vectors are normalized, so a dot product is a cosine.

For a statement s of tokens t_1..t_n and a passage p of tokens u_1..u_m, each token's match is
m_i(p) = max_j cos(t_i, u_j), and

    precision(s, p) = (1/n) Σ_i m_i(p)

`AlignmentFeatures` (what the learned verdict reads) are:
- `align_precision_best`: max_p precision(s, p), the passage that holds the statement best;
- `align_precision_all`: precision against every passage's tokens together;
- `align_weakest`: the lowest m_i over all passages together (a word of the statement no passage
  holds: a changed name, number or a negation);
- `align_low_share`: the share of the statement's tokens whose m_i over all passages is under
  LOW_MATCH (how much of it is new).
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

import numpy as np

MAX_PIECES = 256
WINDOW_STRIDE = 192
# A token whose best cosine among the passages' tokens is under this has no counterpart there
# (chosen as the cosine between unrelated words of one sentence, about 0.5 in MiniLM's last layer).
LOW_MATCH = 0.6
ALIGNMENT_FEATURES = ("align_precision_best", "align_precision_all", "align_weakest", "align_low_share")
# Texts whose token vectors a TokenEncoder keeps (an answer's passages are read by each of its
# statements; a judge reads many answers with the same passages).
REMEMBERED_TEXTS = 512


class TokenEncoder:
    """MiniLM's per-token unit vectors of a text (the model folder of search/dense.py), each text
    encoded once while it is among the REMEMBERED_TEXTS most recent. Thread-safe."""

    def __init__(self, folder: Path, threads: int | None = None):
        os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
        import onnxruntime
        from tokenizers import Tokenizer

        options = onnxruntime.SessionOptions()
        if threads:
            options.intra_op_num_threads = threads
        self._session = onnxruntime.InferenceSession(
            str(folder / "model.onnx"), options, providers=["CPUExecutionProvider"]
        )
        self._inputs = {i.name for i in self._session.get_inputs()}
        self.folder = folder
        self._tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self._tokenizer.no_truncation()
        self._tokenizer.no_padding()
        self._remembered: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def vectors(self, text: str) -> np.ndarray:
        """(tokens, 384) unit vectors of the text's word pieces, [CLS] and [SEP] left out."""
        with self._lock:
            known = self._remembered.get(text)
            if known is not None:
                self._remembered.move_to_end(text)
                return known
            encoded = self._encode(text)
            self._remembered[text] = encoded
            if len(self._remembered) > REMEMBERED_TEXTS:
                self._remembered.popitem(last=False)
            return encoded

    def _encode(self, text: str) -> np.ndarray:
        encoding = self._tokenizer.encode(text, add_special_tokens=False)
        ids = encoding.ids
        if not ids:
            return np.zeros((0, 384), dtype=np.float32)
        inner = MAX_PIECES - 2
        pieces, start = [], 0
        while True:
            hidden = self._run(ids[start : start + inner])
            if start + inner >= len(ids):
                pieces.append(hidden)
                break
            # Overlapping windows: each token once, from the first window that holds it (the
            # next window starts WINDOW_STRIDE on and reads the overlap again with more context).
            pieces.append(hidden[:WINDOW_STRIDE])
            start += WINDOW_STRIDE
        vectors = np.concatenate(pieces)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return (vectors / np.maximum(norms, 1e-12)).astype(np.float32)

    def _run(self, window: list[int]) -> np.ndarray:
        cls_id = self._tokenizer.token_to_id("[CLS]")
        sep_id = self._tokenizer.token_to_id("[SEP]")
        input_ids = np.array([[cls_id, *window, sep_id]], dtype=np.int64)
        feeds = {"input_ids": input_ids, "attention_mask": np.ones_like(input_ids)}
        if "token_type_ids" in self._inputs:
            feeds["token_type_ids"] = np.zeros_like(input_ids)
        hidden = self._session.run(["last_hidden_state"], feeds)[0][0]
        return hidden[1:-1]


@dataclass(frozen=True)
class TokenMatches:
    """Each statement token's best cosine in each passage (rows: passages; columns: tokens)."""

    by_passage: np.ndarray

    @property
    def over_all(self) -> np.ndarray:
        """Each token's best cosine among every passage's tokens."""
        return self.by_passage.max(axis=0)

    def features(self) -> dict[str, float]:
        """The module docstring's features (a statement without tokens, or no passage: 0)."""
        if self.by_passage.size == 0:
            return {
                "align_precision_best": 0.0,
                "align_precision_all": 0.0,
                "align_weakest": 0.0,
                "align_low_share": 1.0,
            }
        over_all = self.over_all
        return {
            "align_precision_best": float(self.by_passage.mean(axis=1).max()),
            "align_precision_all": float(over_all.mean()),
            "align_weakest": float(over_all.min()),
            "align_low_share": float((over_all < LOW_MATCH).mean()),
        }


def token_matches(encoder: TokenEncoder, statement: str, passages: list[str]) -> TokenMatches:
    """The best cosine of each of the statement's tokens in each passage (module docstring)."""
    said = encoder.vectors(statement)
    rows = [
        (said @ encoder.vectors(p).T).max(axis=1) if len(said) and len(encoder.vectors(p)) else np.zeros(len(said))
        for p in passages
    ]
    return TokenMatches(np.array(rows, dtype=np.float32).reshape(len(passages), len(said)))


def alignment_features(encoder: TokenEncoder, statement: str, passages: list[str]) -> dict[str, float]:
    return token_matches(encoder, statement, passages).features()


_encoders: dict[Path, TokenEncoder] = {}
_encoders_lock = threading.Lock()


def default_token_encoder() -> TokenEncoder:
    """The bundled MiniLM's token encoder, loaded once a process."""
    from ragassay.environment import models_dir
    from ragassay.search.dense import assemble_default_model

    folder = assemble_default_model(models_dir())
    with _encoders_lock:
        if folder not in _encoders:
            _encoders[folder] = TokenEncoder(folder)
        return _encoders[folder]
