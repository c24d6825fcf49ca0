"""Continuous robot actions <-> model text or token ids (OpenVLA-style uniform bins).

Bins (:class:`ActionBins`): ``[low, high]`` (default [-1, 1], the envs' ``Box(-1, 1)``) is cut
into ``n_bins`` equal bins of width ``w = (high - low) / n_bins``. A value is clipped to
``[low, high]``, then ``bin = floor((a - low) / w)``, with ``a == high`` put in the last bin;
a bin decodes to its centre ``low + (bin + 0.5) * w``, so ``|centre(bin(a)) - clip(a)| <= w / 2``.
With 256 bins on [-1, 1] (``w = 1/128``): -1 -> 0, 1 -> 255, 0 -> 128 (0 is an edge; bin 128
decodes to +1/256, bin 127 to -1/256: an even ``n_bins`` has no exact zero). NaN is an error
(``ValueError``); +-inf clip to the ends.

Styles (:class:`RobotActionCodec`), for a chunk of ``chunk`` actions of ``dims`` numbers each:

``digits``  decimal bin indices, one space between the numbers of an action, ``;`` between
            actions, nothing else: ``"12 255 0 130;7 8 9 10"`` (chunk 2, dims 4). Grammar::

                text   := action (";" action){chunk - 1}    (surrounding whitespace is ignored)
                action := bin (" " bin){dims - 1}
                bin    := 1 to len(str(n_bins - 1)) ASCII digits, value < n_bins

            Qwen's pre-tokenizer makes every digit its own token, so a bin costs 1 to 3 tokens
            and each separator one more: 13.3 tokens per 4-dim action on uniform bins, 15 for
            the no-op ``"128 128 128 128"`` (tiny and real Qwen tokenizers alike), against 4 in
            the ``tokens`` style. Leading zeros are read (``"007"`` is 7); Unicode digits (``"١٢"``), signs,
            decimals, other separators or any other text make the output invalid.
``padded``  ``digits`` with every bin written at full width, zero-padded (``"012 255 000 130"``
            for 256 bins): each digit has one place value, so the first digit of a number
            always means the same coarse range (with ``digits`` a first ``5`` may be 5, 5x or
            5xx). Read by the ``digits`` grammar (leading zeros are read); 15 tokens per 4-dim
            action.
``tokens``  one token per bin: the ``n_bins`` last ordinary (not special, not added) ids of the
            tokenizer's vocabulary, OpenVLA's "least used" tokens; bin ``b`` is the ``b``-th of
            them in ascending id order. :meth:`RobotActionCodec.render_ids` gives the ids,
            :meth:`~RobotActionCodec.render` their decoded text. Text does not round-trip
            through the tokenizer: BPE re-merges across token boundaries (~11 % of 4-dim
            actions re-encode to other ids with the tiny tokenizer, ~14 % with Qwen's), so the trainer uses the id path
            (``parse(text, token_ids)``). Without ids, text is read by splitting it into the
            reserved tokens' strings; it is valid only when exactly one split into
            ``chunk * dims`` of them exists (tokens whose text is not unique or not valid UTF-8
            cannot be read from text, only from ids).

Parsing never raises on a ``str``: bad output gives ``ParsedActions(invalid=True)`` with a
reason, and a chunk of NaN actions (shape ``(chunk, dims)``, bins ``-1``). The env turns
non-finite actions into a recorded invalid no-op (``info["invalid_action"]``), which leaves the
gripper as it is; the codec itself never invents a fallback action. A partial chunk (fewer
actions than ``chunk``) is invalid as a whole. In the id path, trailing special ids (eos, pad:
the runner's completion ends with eos) are dropped before reading.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np

ActionTextStyle = Literal["digits", "padded", "tokens"]
ACTION_TEXT_STYLES: tuple[ActionTextStyle, ...] = ("digits", "padded", "tokens")

_MAX_TEXT = 20_000  # longest text looked at; anything longer is invalid before any scan
_EXTRA_IDS = 64  # trailing special ids tolerated after the action ids
_DIGITS = frozenset("0123456789")


def _short(text: str, n: int = 40) -> str:
    return text if len(text) <= n else text[: n - 3] + "..."


class ActionBins:
    """Uniform bins over ``[low, high]`` (module docstring for the formula).

    Args:
        n_bins: number of bins (>= 2).
        low, high: the action range, finite, ``low < high`` (env action units).
    """

    def __init__(self, n_bins: int = 256, low: float = -1.0, high: float = 1.0) -> None:
        if isinstance(n_bins, bool) or not isinstance(n_bins, int) or n_bins < 2:
            raise ValueError(f"n_bins must be an int >= 2, got {n_bins!r}")
        if not (math.isfinite(low) and math.isfinite(high) and low < high):
            raise ValueError(f"need finite low < high, got low={low!r} high={high!r}")
        self.n_bins, self.low, self.high = n_bins, float(low), float(high)
        self.width = (self.high - self.low) / n_bins

    def to_bins(self, a: np.ndarray) -> np.ndarray:
        """Bin indices of actions.

        Args:
            a: float array ``(..., D)`` (any shape) in env action units; clipped to [low, high].

        Returns:
            int64 array of ``a``'s shape, values in ``[0, n_bins)``.

        Raises:
            ValueError: ``a`` is not numeric or holds NaN.
        """
        arr = np.asarray(a)
        if arr.dtype.kind not in "biuf":
            raise ValueError(f"actions must be a numeric array, got dtype {arr.dtype}")
        x = arr.astype(np.float64)
        nan = int(np.isnan(x).sum())
        if nan:
            raise ValueError(f"actions hold {nan} NaN value(s); an action must be a number")
        x = np.clip(x, self.low, self.high)
        idx = np.floor((x - self.low) / self.width).astype(np.int64)
        return np.minimum(idx, self.n_bins - 1)

    def centres(self, bins: np.ndarray) -> np.ndarray:
        """Bin centres in env action units: float32 array of ``bins``' shape.

        Raises:
            ValueError: ``bins`` is not integer or holds an index outside ``[0, n_bins)``.
        """
        b = np.asarray(bins)
        if b.dtype.kind not in "iu":
            raise ValueError(f"bins must be an integer array, got dtype {b.dtype}")
        if b.size and (b.min() < 0 or b.max() >= self.n_bins):
            raise ValueError(f"bins must lie in [0, {self.n_bins}), got {b.min()}..{b.max()}")
        return (self.low + (b.astype(np.float64) + 0.5) * self.width).astype(np.float32)


@dataclasses.dataclass(frozen=True)
class ParsedActions:
    """A parsed model reply.

    Attributes:
        actions: float32 ``(chunk, dims)``: bin centres in env action units; all NaN if invalid.
        invalid: the reply did not follow the grammar.
        reason: what was wrong ("" when valid).
        bins: int64 ``(chunk, dims)`` bin indices; all -1 if invalid.
    """

    actions: np.ndarray
    invalid: bool
    reason: str
    bins: np.ndarray


def reserved_token_ids(tokenizer: Any, n: int) -> list[int]:
    """The ``n`` last ordinary vocabulary ids of ``tokenizer``, ascending.

    Ordinary: below ``tokenizer.vocab_size`` (the base vocabulary) and not an added token
    (``added_tokens_decoder``: special tokens such as Llama's ``<s>`` = 0 and non-special added
    ones such as Qwen's ``<think>``). Raises ``ValueError`` when the vocabulary has fewer than
    ``n`` such ids.
    """
    skip = set(getattr(tokenizer, "added_tokens_decoder", {}) or {})
    out: list[int] = []
    tid = int(tokenizer.vocab_size) - 1
    while tid >= 0 and len(out) < n:
        if tid not in skip:
            out.append(tid)
        tid -= 1
    if len(out) < n:
        raise ValueError(
            f"the tokenizer has {len(out)} ordinary ids, fewer than the {n} bins to reserve"
        )
    return sorted(out)


class RobotActionCodec:
    """Chunks of continuous actions <-> text (module docstring for the two styles).

    Args:
        dims: numbers per action (4: dx, dy, dz, gripper).
        chunk: actions per model reply.
        n_bins: bins per dimension over [-1, 1].
        style: ``digits`` or ``tokens``.
        tokenizer: a Hugging Face tokenizer; required for ``tokens``, unused for ``digits``.
    """

    def __init__(
        self,
        dims: int = 4,
        chunk: int = 1,
        n_bins: int = 256,
        style: ActionTextStyle = "digits",
        tokenizer: Any = None,
    ) -> None:
        for name, v in (("dims", dims), ("chunk", chunk)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be an int >= 1, got {v!r}")
        if style not in ACTION_TEXT_STYLES:
            raise ValueError(f"style {style!r} is unknown; use one of {ACTION_TEXT_STYLES}")
        if style == "tokens" and tokenizer is None:
            raise ValueError("style 'tokens' needs the policy's tokenizer")
        self.dims, self.chunk, self.style = dims, chunk, style
        self.bins = ActionBins(n_bins)
        self.n_bins = n_bins
        self.tokenizer = tokenizer
        self._width = len(str(n_bins - 1))
        # digits: longest valid text (every bin at full width, separators between).
        self._max_len = chunk * dims * (self._width + 1)
        self.token_ids: list[int] = []
        self._bin_of_id: dict[int, int] = {}
        self._bin_of_text: dict[str, int] = {}
        self._end_ids: frozenset[int] = frozenset()
        if style == "tokens":
            self._init_tokens(tokenizer)

    def _init_tokens(self, tokenizer: Any) -> None:
        self.token_ids = reserved_token_ids(tokenizer, self.n_bins)
        self._bin_of_id = {t: b for b, t in enumerate(self.token_ids)}
        self._end_ids = frozenset(int(t) for t in getattr(tokenizer, "all_special_ids", ()) or ())
        texts = [tokenizer.decode([t], clean_up_tokenization_spaces=False) for t in self.token_ids]
        seen: dict[str, int] = {}
        for s in texts:
            seen[s] = seen.get(s, 0) + 1
        self._bin_of_text = {
            s: b for b, s in enumerate(texts) if s and seen[s] == 1 and "\ufffd" not in s
        }
        self._piece_lens = sorted({len(s) for s in self._bin_of_text}, reverse=True)
        self._max_len = self.chunk * self.dims * max(self._piece_lens, default=0)

    # -- render ---------------------------------------------------------------------------------

    def _to_bins(self, actions: np.ndarray) -> np.ndarray:
        a = np.asarray(actions)
        if a.ndim == 1 and self.chunk == 1:
            a = a[None, :]
        if a.shape != (self.chunk, self.dims):
            raise ValueError(
                f"actions must have shape ({self.chunk}, {self.dims})"
                + (f" or ({self.dims},)" if self.chunk == 1 else "")
                + f", got {a.shape}"
            )
        return self.bins.to_bins(a)

    def render(self, actions: np.ndarray) -> str:
        """The reply text for ``actions`` (float ``(chunk, dims)``, or ``(dims,)`` when chunk 1).

        Raises:
            ValueError: wrong shape or NaN (demonstrations must be real actions).
        """
        b = self._to_bins(actions)
        if self.style in ("digits", "padded"):
            w = self._width if self.style == "padded" else 0
            return ";".join(" ".join(str(int(v)).zfill(w) for v in row) for row in b)
        ids = [self.token_ids[int(v)] for v in b.reshape(-1)]
        return self.tokenizer.decode(ids, clean_up_tokenization_spaces=False)

    def render_ids(self, actions: np.ndarray) -> list[int]:
        """Token ids for ``actions`` (``tokens`` style only): ``chunk * dims`` reserved ids,
        action after action. These, not the re-tokenized text, are the SFT targets."""
        if self.style != "tokens":
            raise ValueError("render_ids is for style 'tokens'; digits replies are text (render)")
        return [self.token_ids[int(v)] for v in self._to_bins(actions).reshape(-1)]

    # -- parse ----------------------------------------------------------------------------------

    def _invalid(self, reason: str) -> ParsedActions:
        shape = (self.chunk, self.dims)
        return ParsedActions(
            actions=np.full(shape, np.nan, dtype=np.float32),
            invalid=True,
            reason=reason,
            bins=np.full(shape, -1, dtype=np.int64),
        )

    def _valid(self, bins: list[int]) -> ParsedActions:
        b = np.asarray(bins, dtype=np.int64).reshape(self.chunk, self.dims)
        return ParsedActions(actions=self.bins.centres(b), invalid=False, reason="", bins=b)

    def parse(self, text: str, token_ids: Sequence[int] | None = None) -> ParsedActions:
        """Read a reply; never raises on a ``str`` (invalid output -> ``invalid=True``).

        Args:
            text: the decoded reply (special tokens skipped).
            token_ids: the reply's generated ids (``tokens`` style: read instead of the text;
                ignored for ``digits``).
        """
        if self.style == "tokens" and token_ids is not None:
            return self._parse_ids(token_ids)
        if not isinstance(text, str):
            return self._invalid(f"reply must be text, got {type(text).__name__}")
        if len(text) > _MAX_TEXT:
            return self._invalid(f"reply is {len(text)} characters, longer than {_MAX_TEXT}")
        if self.style in ("digits", "padded"):
            return self._parse_digits(text)
        return self._parse_token_text(text)

    def _parse_digits(self, text: str) -> ParsedActions:
        body = text.strip()
        if not body:
            return self._invalid("empty reply; expected bin numbers")
        if len(body) > self._max_len:
            return self._invalid(
                f"reply is {len(body)} characters, longer than {self.chunk} action(s) can be"
            )
        steps = body.split(";")
        if len(steps) != self.chunk:
            return self._invalid(
                f"expected {self.chunk} action(s) separated by ';', got {len(steps)}"
            )
        out: list[int] = []
        for i, step in enumerate(steps):
            parts = step.split(" ")
            if len(parts) != self.dims:
                return self._invalid(
                    f"action {i + 1}: expected {self.dims} numbers separated by single spaces, "
                    f"got {len(parts)} parts in {_short(step)!r}"
                )
            for j, part in enumerate(parts):
                where = f"action {i + 1} number {j + 1}"
                if not part or not _DIGITS.issuperset(part):
                    return self._invalid(f"{where}: {_short(part)!r} is not a decimal bin index")
                if len(part) > self._width:
                    return self._invalid(f"{where}: {_short(part)!r} has too many digits")
                value = int(part)
                if value >= self.n_bins:
                    return self._invalid(f"{where}: {value} is not a bin in 0..{self.n_bins - 1}")
                out.append(value)
        return self._valid(out)

    def _parse_ids(self, token_ids: Sequence[int]) -> ParsedActions:
        want = self.chunk * self.dims
        try:
            n = len(token_ids)
        except TypeError:
            return self._invalid(f"token_ids must be a sequence, got {type(token_ids).__name__}")
        if n > want + _EXTRA_IDS:
            return self._invalid(f"reply has {n} tokens; expected {want}")
        try:
            ids = [int(t) for t in token_ids]
        except (TypeError, ValueError, OverflowError):
            return self._invalid("token_ids must be integers")
        while ids and ids[-1] in self._end_ids:
            ids.pop()
        if len(ids) != want:
            return self._invalid(f"reply has {len(ids)} action tokens; expected {want}")
        out = []
        for k, t in enumerate(ids):
            b = self._bin_of_id.get(t)
            if b is None:
                return self._invalid(f"token {k + 1} (id {t}) is not a reserved action token")
            out.append(b)
        return self._valid(out)

    def _parse_token_text(self, text: str) -> ParsedActions:
        want = self.chunk * self.dims
        if not text:
            return self._invalid("empty reply; expected action tokens")
        if len(text) > self._max_len:
            return self._invalid(f"reply is {len(text)} characters, longer than {want} tokens")
        # ways[i]: {k: number of splits of text[i:] into k reserved pieces, capped at 2};
        # first[i]: {k: length of the first piece of the first such split found}.
        size = len(text)
        ways: list[dict[int, int]] = [{} for _ in range(size + 1)]
        first: list[dict[int, int]] = [{} for _ in range(size + 1)]
        ways[size] = {0: 1}
        for i in range(size - 1, -1, -1):
            for n in self._piece_lens:
                if i + n > size or text[i : i + n] not in self._bin_of_text:
                    continue
                for k, w in ways[i + n].items():
                    if k < want:
                        ways[i][k + 1] = min(2, ways[i].get(k + 1, 0) + w)
                        first[i].setdefault(k + 1, n)
        count = ways[0].get(want, 0)
        if count == 0:
            return self._invalid(f"reply is not {want} reserved action tokens")
        if count > 1:
            return self._invalid(f"reply splits into {want} action tokens in more than one way")
        out, i = [], 0
        for left in range(want, 0, -1):
            n = first[i][left]
            out.append(self._bin_of_text[text[i : i + n]])
            i += n
        return self._valid(out)
